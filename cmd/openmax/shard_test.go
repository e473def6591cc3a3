package main

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/openmax/openmax/provider/clock"
)

// shardLibrary copies some library cassettes into root/tapes and their
// golden files into root/golden/tapes (the default golden folder) and
// returns the cassettes' folder and names.
func shardLibrary(t *testing.T, root string) (string, []string) {
	t.Helper()
	names := []string{"429_http_date", "5xx_and_529", "anthropic_plain", "anthropic_tool_round_trip", "gemini_plain", "openai_plain", "openai_tool_round_trip", "truncated_tool_call"}
	dir := filepath.Join(root, "tapes")
	for _, n := range names {
		for _, f := range [][2]string{
			{filepath.Join(libraryDir, n+".yaml"), filepath.Join(dir, n+".yaml")},
			{filepath.Join("../../golden/cassettes", n+".golden"), filepath.Join(root, "golden", "tapes", n+".golden")},
		} {
			if err := os.MkdirAll(filepath.Dir(f[1]), 0o755); err != nil {
				t.Fatal(err)
			}
			copyFile(t, f[0], f[1], 0o644)
		}
	}
	return dir, names
}

// shardVars are the variables of every engine; the tests clear them all
// (the suite itself may run under one) and set the ones of a case.
var shardVars = []string{"OPENMAX_SHARD", "OPENMAX_SHARDS", "TEST_SHARD_INDEX", "TEST_TOTAL_SHARDS", "TEST_SHARD_STATUS_FILE", "XML_OUTPUT_FILE",
	"TEST_UNDECLARED_OUTPUTS_DIR", "TESTBRIDGE_TEST_ONLY", "CIRCLE_NODE_INDEX", "CIRCLE_NODE_TOTAL", "BUILDKITE_PARALLEL_JOB",
	"BUILDKITE_PARALLEL_JOB_COUNT", "CI_NODE_INDEX", "CI_NODE_TOTAL", "JOB_COMPLETION_INDEX"}

// runShardBinary runs the real binary with the environment cleared of
// every engine's variables, then extra.
func runShardBinary(t *testing.T, extra []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, buildBinary(t), args...)
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool {
		k, _, _ := strings.Cut(kv, "=")
		return slices.Contains(shardVars, k)
	})
	cmd.Env = append(cmd.Env, extra...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	return out.String(), errb.String(), cmd.ProcessState.ExitCode()
}

// reportNames are the result names of a JSON report.
func reportNames(t *testing.T, data string) []string {
	t.Helper()
	var doc struct {
		Results []struct{ Name, Verdict string }
	}
	if err := json.Unmarshal([]byte(data), &doc); err != nil {
		t.Fatalf("%v\n%s", err, data)
	}
	var out []string
	for _, r := range doc.Results {
		if r.Verdict != "pass" {
			t.Errorf("%s: %s", r.Name, r.Verdict)
		}
		out = append(out, r.Name)
	}
	return out
}

// junitNames are the testcase names of a JUnit report, which must pass
// the schema check.
func junitNames(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := validateJUnit(data); err != nil {
		t.Fatalf("%s breaks the JUnit schema: %v\n%s", path, err, data)
	}
	var doc struct {
		Cases []struct {
			Name string `xml:"name,attr"`
		} `xml:"testsuite>testcase"`
	}
	if err := xml.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, c := range doc.Cases {
		out = append(out, c.Name)
	}
	return out
}

// TestReplayShardEngines: `openmax replay DIR` with no --shard, through
// the binary, under each CI engine's variables: every shard says where
// its shard came from, and the N shards hold every cassette exactly once.
// Under Bazel it also touches the status file, writes its JUnit to
// XML_OUTPUT_FILE and its JSON among the undeclared outputs, and honours
// the test filter.
func TestReplayShardEngines(t *testing.T) {
	root := t.TempDir()
	dir, names := shardLibrary(t, root)
	const n = 3
	for _, tt := range []struct {
		engine string
		env    func(k int) []string // k is 0-based
		args   []string
	}{
		{"OPENMAX_SHARD", func(k int) []string { return []string{"OPENMAX_SHARD=" + strconv.Itoa(k+1) + "/3"} }, nil},
		{"bazel", func(k int) []string { return []string{"TEST_SHARD_INDEX=" + strconv.Itoa(k), "TEST_TOTAL_SHARDS=3"} }, nil},
		{"circleci", func(k int) []string { return []string{"CIRCLE_NODE_INDEX=" + strconv.Itoa(k), "CIRCLE_NODE_TOTAL=3"} }, nil},
		{"buildkite", func(k int) []string {
			return []string{"BUILDKITE_PARALLEL_JOB=" + strconv.Itoa(k), "BUILDKITE_PARALLEL_JOB_COUNT=3"}
		}, nil},
		{"gitlab", func(k int) []string { return []string{"CI_NODE_INDEX=" + strconv.Itoa(k+1), "CI_NODE_TOTAL=3"} }, nil},
		{"kubernetes", func(k int) []string { return []string{"JOB_COMPLETION_INDEX=" + strconv.Itoa(k)} }, []string{"--shards", "3"}},
		{"flag", func(k int) []string { return []string{"CIRCLE_NODE_INDEX=0", "CIRCLE_NODE_TOTAL=2"} }, nil}, // --shard wins
	} {
		t.Run(tt.engine, func(t *testing.T) {
			var all []string
			for k := range n {
				args := append([]string{"replay", dir, "--json", "-"}, tt.args...)
				if tt.engine == "flag" {
					args = append(args, "--shard", strconv.Itoa(k+1)+"/3")
				}
				stdout, stderr, code := runShardBinary(t, tt.env(k), args...)
				if code != 0 {
					t.Fatalf("shard %d: exit %d\n%s", k+1, code, stderr)
				}
				if want := "shard " + strconv.Itoa(k+1) + "/3 (from " + tt.engine + ")"; !strings.Contains(stderr, want) {
					t.Errorf("shard %d: stderr lacks %q:\n%s", k+1, want, stderr)
				}
				all = append(all, reportNames(t, stdout)...)
			}
			slices.Sort(all)
			if !slices.Equal(all, names) {
				t.Errorf("the shards ran %v, want each of %v once", all, names)
			}
		})
	}

	t.Run("bazel protocol", func(t *testing.T) {
		var all []string
		for k := range n {
			tl := filepath.Join(t.TempDir(), "testlogs")
			os.MkdirAll(filepath.Join(tl, "outputs"), 0o755)
			env := []string{"TEST_SHARD_INDEX=" + strconv.Itoa(k), "TEST_TOTAL_SHARDS=3",
				"TEST_SHARD_STATUS_FILE=" + filepath.Join(tl, "test.shard"), "XML_OUTPUT_FILE=" + filepath.Join(tl, "test.xml"),
				"TEST_UNDECLARED_OUTPUTS_DIR=" + filepath.Join(tl, "outputs")}
			if _, stderr, code := runShardBinary(t, env, "replay", dir); code != 0 {
				t.Fatalf("exit %d\n%s", code, stderr)
			}
			if _, err := os.Stat(filepath.Join(tl, "test.shard")); err != nil {
				t.Errorf("shard %d did not touch TEST_SHARD_STATUS_FILE: %v", k+1, err)
			}
			got := junitNames(t, filepath.Join(tl, "test.xml"))
			js, err := os.ReadFile(filepath.Join(tl, "outputs", "openmax-replay.json"))
			if err != nil {
				t.Fatal(err)
			}
			if fromJSON := reportNames(t, string(js)); !slices.Equal(fromJSON, got) {
				t.Errorf("shard %d: JSON %v, JUnit %v", k+1, fromJSON, got)
			}
			all = append(all, got...)
		}
		slices.Sort(all)
		if !slices.Equal(all, names) {
			t.Errorf("the shards ran %v, want each of %v once", all, names)
		}
		stdout, stderr, code := runShardBinary(t, []string{"TESTBRIDGE_TEST_ONLY=^openai_"}, "replay", dir, "--json", "-")
		if got := reportNames(t, stdout); code != 0 || !slices.Equal(got, []string{"openai_plain", "openai_tool_round_trip"}) {
			t.Errorf("--test_filter ^openai_: exit %d, ran %v\n%s", code, got, stderr)
		}
	})
}

// runCLIEnv is runCLI with these environment variables.
func runCLIEnv(t *testing.T, vars map[string]string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	code = run(ctx, args, strings.NewReader(""), &out, &errb, env{clock: clock.Real{}, getenv: func(k string) string { return vars[k] }})
	return out.String(), errb.String(), code
}

// TestReplayShardEdges: an empty shard exits 0; malformed shards and
// shards of a single cassette are usage errors; --timings balances.
func TestReplayShardEdges(t *testing.T) {
	root := t.TempDir()
	dir, names := shardLibrary(t, root)
	one := filepath.Join(root, "one")
	os.MkdirAll(one, 0o755)
	copyFile(t, filepath.Join(dir, "openai_plain.yaml"), filepath.Join(one, "openai_plain.yaml"), 0o644)
	copyFile(t, filepath.Join(root, "golden", "tapes", "openai_plain.golden"), filepath.Join(root, "golden", "openai_plain.golden"), 0o644)

	t.Run("empty shard", func(t *testing.T) {
		empty := 0
		for k := 1; k <= 4; k++ {
			stdout, stderr, code := runCLIEnv(t, nil, "replay", one, "--golden", filepath.Join(root, "golden"), "--shard", strconv.Itoa(k)+"/4")
			if code != 0 {
				t.Fatalf("shard %d/4 of one cassette: exit %d\n%s%s", k, code, stdout, stderr)
			}
			if strings.Contains(stdout, "0 passed, 0 failed") {
				empty++
			}
		}
		if empty != 3 {
			t.Errorf("%d empty shards of 4 for one cassette, want 3", empty)
		}
	})

	t.Run("usage", func(t *testing.T) {
		for _, tt := range []struct {
			name string
			vars map[string]string
			args []string
			code int
			want string
		}{
			{"K out of range", nil, []string{"replay", dir, "--shard", "0/3"}, 2, "K must be from 1 to 3"},
			{"not K/N", nil, []string{"replay", dir, "--shard", "3"}, 2, "is not K/N"},
			{"one cassette", nil, []string{"replay", filepath.Join(dir, "openai_plain.yaml"), "--shard", "1/2"}, 2, "split a directory"},
			{"kubernetes without --shards", map[string]string{"JOB_COMPLETION_INDEX": "1"}, []string{"replay", dir}, 2, "--shards N"},
			{"gitlab zero", map[string]string{"CI_NODE_INDEX": "0", "CI_NODE_TOTAL": "2"}, []string{"replay", dir}, 2, "K must be from 1 to 2"},
			{"sweep bad shard", nil, []string{"cassette", "sweep", dir, "--shard", "4/3"}, 2, "K must be from 1 to 3"},
			{"missing timings", nil, []string{"replay", dir, "--shard", "1/2", "--timings", filepath.Join(root, "none.xml")}, 1, "--timings"},
		} {
			_, stderr, code := runCLIEnv(t, tt.vars, tt.args...)
			if code != tt.code || !strings.Contains(stderr, tt.want) {
				t.Errorf("%s: exit %d, stderr %q; want %d and %q", tt.name, code, stderr, tt.code, tt.want)
			}
		}
	})

	t.Run("timings", func(t *testing.T) {
		// A previous run's report says one cassette takes as long as all
		// the others together and then some: it gets a shard of its own.
		var b strings.Builder
		b.WriteString(`<testsuites><testsuite name="x" tests="8">`)
		for _, n := range names {
			d := "1.000"
			if n == "gemini_plain" {
				d = "100.000"
			}
			b.WriteString(`<testcase name="` + n + `" classname="x" time="` + d + `"/>`)
		}
		b.WriteString(`</testsuite></testsuites>`)
		tm := filepath.Join(root, "timings.xml")
		os.WriteFile(tm, []byte(b.String()), 0o644)
		var sizes []int
		for k := 1; k <= 2; k++ {
			stdout, stderr, code := runCLIEnv(t, nil, "replay", dir, "--shard", strconv.Itoa(k)+"/2", "--timings", tm, "--json", "-")
			if code != 0 {
				t.Fatalf("exit %d\n%s", code, stderr)
			}
			got := reportNames(t, stdout)
			if slices.Contains(got, "gemini_plain") && len(got) != 1 {
				t.Errorf("the slow cassette shares shard %d/2 with %v", k, got)
			}
			sizes = append(sizes, len(got))
		}
		if sizes[0]+sizes[1] != len(names) {
			t.Errorf("shard sizes %v, want %d in all", sizes, len(names))
		}
	})
}

// TestSweepShard: `openmax cassette sweep --shard K/N` splits by variant:
// one cassette's variants spread over every shard, and the shards' rows
// are the whole sweep's.
func TestSweepShard(t *testing.T) {
	root := t.TempDir()
	dir, _ := shardLibrary(t, root)
	file := filepath.Join(dir, "openai_tool_round_trip.yaml")
	type rows struct {
		Rows []struct {
			Cassette, Variant string
			Failures          []string
		}
	}
	sweepRows := func(args ...string) map[string]int {
		stdout, stderr, code := runCLIEnv(t, nil, append([]string{"cassette", "sweep", file, "--json", "--max-variants", "12"}, args...)...)
		if code != 0 {
			t.Fatalf("sweep %v: exit %d\n%s", args, code, stderr)
		}
		var r rows
		if err := json.Unmarshal([]byte(stdout), &r); err != nil {
			t.Fatal(err)
		}
		out := map[string]int{}
		for _, row := range r.Rows {
			out[row.Cassette+" "+row.Variant] = len(row.Failures)
		}
		return out
	}
	whole := sweepRows()
	union := map[string]int{}
	for k := 1; k <= 3; k++ {
		part := sweepRows("--shard", strconv.Itoa(k)+"/3")
		if len(part) == 0 {
			t.Errorf("shard %d/3 of one cassette's %d variants is empty", k, len(whole))
		}
		for key, f := range part {
			if _, dup := union[key]; dup {
				t.Errorf("%s in two shards", key)
			}
			union[key] = f
		}
	}
	if len(union) != len(whole) {
		t.Errorf("the shards hold %d rows, the whole sweep %d", len(union), len(whole))
	}
	for key, f := range whole {
		if g, ok := union[key]; !ok || g != f {
			t.Errorf("%s: sharded %d failures (present %v), whole %d", key, g, ok, f)
		}
	}
}

// TestReportMerge: the shards' JUnit and JSON reports, merged by the
// binary, are byte for byte the whole run's; the merged JUnit passes the
// schema check, with times when the shards recorded durations; a testcase
// in two reports, a mix of JUnit and JSON, and a failure are reported.
func TestReportMerge(t *testing.T) {
	root := t.TempDir()
	dir, names := shardLibrary(t, root)
	out := t.TempDir()
	p := func(name string) string { return filepath.Join(out, name) }
	if _, stderr, code := runShardBinary(t, nil, "replay", dir, "--junit", p("whole.xml"), "--json", p("whole.json")); code != 0 {
		t.Fatalf("whole: exit %d\n%s", code, stderr)
	}
	var xmls, jsons, timed []string
	for k := 1; k <= 3; k++ {
		s := strconv.Itoa(k)
		if _, stderr, code := runShardBinary(t, nil, "replay", dir, "--shard", s+"/3", "--junit", p(s+".xml"), "--json", p(s+".json")); code != 0 {
			t.Fatalf("shard %d: exit %d\n%s", k, code, stderr)
		}
		if _, stderr, code := runShardBinary(t, nil, "replay", dir, "--shard", s+"/3", "--durations", "--junit", p(s+"-timed.xml")); code != 0 {
			t.Fatalf("shard %d: exit %d\n%s", k, code, stderr)
		}
		xmls, jsons, timed = append(xmls, p(s+".xml")), append(jsons, p(s+".json")), append(timed, p(s+"-timed.xml"))
	}
	for _, tt := range []struct {
		name string
		args []string
		want string // the whole run's report
	}{
		{"junit", append([]string{"report", "merge", "--junit", p("merged.xml")}, xmls...), p("whole.xml")},
		{"json", append([]string{"report", "merge", "--json", p("merged.json")}, jsons...), p("whole.json")},
		{"json to junit", append([]string{"report", "merge", "--junit", p("fromjson.xml"), "--suite", "openmax replay tapes"}, jsons...), p("whole.xml")},
	} {
		_, stderr, code := runShardBinary(t, nil, tt.args...)
		if code != 0 || !strings.Contains(stderr, strconv.Itoa(len(names))+" passed, 0 failed") {
			t.Fatalf("%s: exit %d\n%s", tt.name, code, stderr)
		}
		got, _ := os.ReadFile(tt.args[3])
		want, _ := os.ReadFile(tt.want)
		if !bytes.Equal(got, want) {
			t.Errorf("%s: merged\n%s\nwhole\n%s", tt.name, got, want)
		}
		if strings.HasSuffix(tt.args[3], ".xml") {
			if err := validateJUnit(got); err != nil {
				t.Errorf("%s: the merged JUnit breaks the schema: %v", tt.name, err)
			}
		}
	}

	// With durations: file, name, classname and time on every testcase,
	// the suite's time their sum.
	stdout, stderr, code := runShardBinary(t, nil, append([]string{"report", "merge"}, timed...)...)
	if code != 0 {
		t.Fatalf("timed: exit %d\n%s", code, stderr)
	}
	if err := validateJUnit([]byte(stdout)); err != nil {
		t.Errorf("the merged timed JUnit breaks the schema: %v\n%s", err, stdout)
	}
	var doc struct {
		Suite struct {
			Time  string `xml:"time,attr"`
			Cases []struct {
				Name      string `xml:"name,attr"`
				Classname string `xml:"classname,attr"`
				File      string `xml:"file,attr"`
				Time      string `xml:"time,attr"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatal(err)
	}
	var sum float64
	for i, c := range doc.Suite.Cases {
		d, err := strconv.ParseFloat(c.Time, 64)
		if c.Name != names[i] || c.Classname != "openmax replay tapes" || c.File != filepath.Join(dir, names[i]+".yaml") || err != nil || d <= 0 {
			t.Errorf("testcase %d: %+v", i, c)
		}
		sum += d
	}
	if st, _ := strconv.ParseFloat(doc.Suite.Time, 64); len(doc.Suite.Cases) != len(names) || st < sum-0.001 || st > sum+0.001 {
		t.Errorf("%d testcases, suite time %s, their sum %.3f", len(doc.Suite.Cases), doc.Suite.Time, sum)
	}

	// A testcase in two reports: the shards overlap.
	if _, stderr, code := runShardBinary(t, nil, "report", "merge", xmls[0], xmls[0]); code != 1 || !strings.Contains(stderr, "the shards of one run are disjoint") {
		t.Errorf("a report twice: exit %d\n%s", code, stderr)
	}
	if _, stderr, code := runShardBinary(t, nil, "report", "merge", xmls[0], jsons[1]); code != 2 || !strings.Contains(stderr, "mix JUnit and JSON") {
		t.Errorf("mixed reports: exit %d\n%s", code, stderr)
	}
	// A failing cassette: the merge keeps its failure and exits 1.
	os.WriteFile(filepath.Join(root, "golden", "tapes", "openai_plain.golden"), []byte("not this\n"), 0o644)
	for k := 1; k <= 3; k++ {
		s := strconv.Itoa(k)
		runShardBinary(t, nil, "replay", dir, "--shard", s+"/3", "--overwrite", "--junit", p(s+".xml"))
	}
	stdout, stderr, code = runShardBinary(t, nil, append([]string{"report", "merge"}, xmls...)...)
	if code != 1 || !strings.Contains(stderr, "1 failed") || !strings.Contains(stdout, `<failure message="differs from`) {
		t.Errorf("a failure: exit %d\n%s%s", code, stdout, stderr)
	}
	if err := validateJUnit([]byte(stdout)); err != nil {
		t.Errorf("the merged JUnit with a failure breaks the schema: %v", err)
	}
}

// TestJUnitSchemaCheck: the schema check itself rejects what JUnit
// readers reject.
func TestJUnitSchemaCheck(t *testing.T) {
	for _, tt := range []struct {
		name, doc, want string
	}{
		{"ok", `<testsuites tests="1"><testsuite name="s" tests="1"><testcase name="a" classname="s" time="0.5" file="a.yaml"/></testsuite></testsuites>`, ""},
		{"no classname", `<testsuite name="s" tests="1"><testcase name="a"/></testsuite>`, "lacks classname"},
		{"count off", `<testsuite name="s" tests="2"><testcase name="a" classname="s"/></testsuite>`, "holds 1"},
		{"failures off", `<testsuite name="s" tests="1" failures="0"><testcase name="a" classname="s"><failure message="m"/></testcase></testsuite>`, "failures"},
		{"bad time", `<testsuite name="s" tests="1"><testcase name="a" classname="s" time="1s"/></testsuite>`, "decimal"},
		{"unknown attribute", `<testsuite name="s" tests="1"><testcase name="a" classname="s" speed="9"/></testsuite>`, "does not allow"},
		{"unknown child", `<testsuite name="s" tests="1"><testcase name="a" classname="s"><oops/></testcase></testsuite>`, "inside <testcase>"},
		{"root", `<results/>`, "root <results>"},
		{"trailing", `<testsuite name="s" tests="0"></testsuite><x/>`, "after the root"},
		{"totals", `<testsuites tests="3"><testsuite name="s" tests="1"><testcase name="a" classname="s"/></testsuite></testsuites>`, "suites hold 1"},
	} {
		err := validateJUnit([]byte(tt.doc))
		if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("%s: %v, want %q", tt.name, err, tt.want)
		}
	}
}
