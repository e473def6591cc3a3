package report_test

import (
	"fmt"
	"os"

	"github.com/openmax/openmax/internal/report"
)

var rows = []report.Row{
	{Name: "story", Verdict: report.Pass},
	{Name: "quota_429", Verdict: report.Fail, Reason: "differs from golden/cassettes/quota_429.golden"},
}

func ExampleJSON() {
	if err := report.JSON(os.Stdout, rows); err != nil {
		fmt.Println(err)
	}
	// Output:
	// {
	//   "format": "openmax-replay-report/1",
	//   "total": 2,
	//   "passed": 1,
	//   "failed": 1,
	//   "updated": 0,
	//   "results": [
	//     {
	//       "name": "story",
	//       "verdict": "pass"
	//     },
	//     {
	//       "name": "quota_429",
	//       "verdict": "fail",
	//       "reason": "differs from golden/cassettes/quota_429.golden"
	//     }
	//   ]
	// }
}

func ExampleJUnit() {
	if err := report.JUnit(os.Stdout, "cassettes", rows); err != nil {
		fmt.Println(err)
	}
	// Output:
	// <?xml version="1.0" encoding="UTF-8"?>
	// <testsuites name="cassettes" tests="2" failures="1" errors="0">
	//   <testsuite name="cassettes" tests="2" failures="1" errors="0" skipped="0">
	//     <testcase name="story" classname="cassettes"></testcase>
	//     <testcase name="quota_429" classname="cassettes">
	//       <failure message="differs from golden/cassettes/quota_429.golden" type="fail">differs from golden/cassettes/quota_429.golden</failure>
	//     </testcase>
	//   </testsuite>
	// </testsuites>
}

func ExampleTable() {
	if err := report.Table(os.Stdout, rows); err != nil {
		fmt.Println(err)
	}
	// Output:
	// story                                    pass
	// quota_429                                FAIL  differs from golden/cassettes/quota_429.golden
	// 1 passed, 1 failed
}
