package report

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/sebdah/goldie/v2"
)

// The shapes a JUnit consumer reads, declared here independently of the
// writer's own types, so the round trip proves the XML is plain JUnit.
type xmlSuites struct {
	XMLName  xml.Name   `xml:"testsuites"`
	Name     string     `xml:"name,attr"`
	Tests    int        `xml:"tests,attr"`
	Failures int        `xml:"failures,attr"`
	Suites   []xmlSuite `xml:"testsuite"`
}

type xmlSuite struct {
	Name     string    `xml:"name,attr"`
	Tests    int       `xml:"tests,attr"`
	Failures int       `xml:"failures,attr"`
	Errors   int       `xml:"errors,attr"`
	Time     *string   `xml:"time,attr"`
	Cases    []xmlCase `xml:"testcase"`
}

type xmlCase struct {
	Name      string  `xml:"name,attr"`
	Classname string  `xml:"classname,attr"`
	Time      *string `xml:"time,attr"`
	Failure   *struct {
		Message string `xml:"message,attr"`
		Type    string `xml:"type,attr"`
		Text    string `xml:",chardata"`
	} `xml:"failure"`
	SystemOut string `xml:"system-out"`
}

var sample = []Row{
	{Name: "story", Verdict: Pass},
	{Name: "quota_429", Verdict: Fail, Reason: "differs from golden/quota_429.golden\n-old line\n+new line"},
	{Name: "died_after_text", Verdict: Updated},
	{Name: "odd <&\"'> name", Verdict: Fail, Reason: "a bell \a, an escape \x1b[31m and bad UTF-8 \xff in the reason"},
}

func TestJUnitRoundTrip(t *testing.T) {
	timed := []Row{
		{Name: "a", Verdict: Pass, Duration: 1500 * time.Millisecond},
		{Name: "b", Verdict: Fail, Reason: "boom", Duration: 250 * time.Millisecond},
		{Name: "c", Verdict: Pass},
	}
	tests := []struct {
		name      string
		suite     string
		rows      []Row
		wantSuite string
		wantFail  int
		wantTime  string // the suite's time attribute, "" for none
	}{
		{"no rows", "replay", nil, "replay", 0, ""},
		{"default suite name", "", sample[:1], DefaultSuite, 0, ""},
		{"mixed verdicts and awkward text", "cassettes", sample, "cassettes", 2, ""},
		{"durations", "timed", timed, "timed", 1, "1.750"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := JUnit(&b, tt.suite, tt.rows); err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(b.String(), xml.Header) {
				t.Errorf("no XML header:\n%s", b.String())
			}
			var doc xmlSuites
			if err := xml.Unmarshal(b.Bytes(), &doc); err != nil {
				t.Fatalf("the XML does not parse: %v\n%s", err, b.String())
			}
			if len(doc.Suites) != 1 {
				t.Fatalf("%d testsuite elements, want 1", len(doc.Suites))
			}
			s := doc.Suites[0]
			if s.Name != tt.wantSuite || s.Tests != len(tt.rows) || s.Failures != tt.wantFail || s.Errors != 0 ||
				doc.Tests != len(tt.rows) || doc.Failures != tt.wantFail {
				t.Errorf("suite %q tests %d failures %d errors %d (root %d/%d); want %q %d %d 0",
					s.Name, s.Tests, s.Failures, s.Errors, doc.Tests, doc.Failures, tt.wantSuite, len(tt.rows), tt.wantFail)
			}
			if got := deref(s.Time); got != tt.wantTime {
				t.Errorf("suite time %q, want %q", got, tt.wantTime)
			}
			if len(s.Cases) != len(tt.rows) {
				t.Fatalf("%d testcases, want %d", len(s.Cases), len(tt.rows))
			}
			for i, r := range tt.rows {
				c := s.Cases[i]
				if c.Name != strings.ToValidUTF8(r.Name, "\uFFFD") || c.Classname != tt.wantSuite {
					t.Errorf("case %d: name %q classname %q", i, c.Name, c.Classname)
				}
				if (c.Time != nil) != (r.Duration > 0) {
					t.Errorf("case %d: time %v for duration %v", i, deref(c.Time), r.Duration)
				}
				if (c.Failure != nil) != (r.Verdict == Fail) {
					t.Fatalf("case %d: failure %v for verdict %s", i, c.Failure, r.Verdict)
				}
				if c.Failure != nil {
					first, _, _ := strings.Cut(r.Reason, "\n")
					if !sameText(c.Failure.Message, first) || !sameText(c.Failure.Text, r.Reason) || c.Failure.Type != "fail" {
						t.Errorf("case %d: failure %+v for reason %q", i, *c.Failure, r.Reason)
					}
				}
				if r.Verdict == Updated && !strings.Contains(c.SystemOut, "updated") {
					t.Errorf("case %d: an updated row does not say so: %q", i, c.SystemOut)
				}
			}
		})
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// sameText compares text that went through XML: characters XML cannot
// carry come back as U+FFFD.
func sameText(got, want string) bool {
	var b strings.Builder
	for _, r := range strings.ToValidUTF8(want, "\uFFFD") {
		if r < 0x20 && r != '\n' && r != '\t' && r != '\r' {
			r = '\uFFFD'
		}
		b.WriteRune(r)
	}
	return got == b.String()
}

// TestJSONSchemaIsStable checks the JSON document's field names exactly:
// consumers depend on them.
func TestJSONSchemaIsStable(t *testing.T) {
	rows := append(append([]Row{}, sample...), Row{Name: "timed", Verdict: Pass, Duration: 12 * time.Millisecond})
	var b bytes.Buffer
	if err := JSON(&b, rows); err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if got, want := keys(doc), []string{"failed", "format", "passed", "results", "total", "updated"}; !reflect.DeepEqual(got, want) {
		t.Errorf("document keys %v, want %v", got, want)
	}
	if doc["format"] != Format || doc["total"] != 5.0 || doc["passed"] != 2.0 || doc["failed"] != 2.0 || doc["updated"] != 1.0 {
		t.Errorf("counts: %v", doc)
	}
	results := doc["results"].([]any)
	wantKeys := [][]string{
		{"name", "verdict"},
		{"name", "reason", "verdict"},
		{"name", "verdict"},
		{"name", "reason", "verdict"},
		{"duration_seconds", "name", "verdict"},
	}
	for i, r := range results {
		if got := keys(r.(map[string]any)); !reflect.DeepEqual(got, wantKeys[i]) {
			t.Errorf("result %d keys %v, want %v", i, got, wantKeys[i])
		}
	}
	if d := results[4].(map[string]any)["duration_seconds"]; d != 0.012 {
		t.Errorf("duration_seconds %v, want 0.012", d)
	}
	var typed Document
	if err := json.Unmarshal(b.Bytes(), &typed); err != nil || len(typed.Results) != len(rows) {
		t.Errorf("round trip into Document: %v, %d results", err, len(typed.Results))
	}
}

func keys(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestGolden pins the exact bytes of each output (go test -update rewrites
// testdata/*.golden).
func TestGolden(t *testing.T) {
	timed := []Row{
		{Name: "story", Verdict: Pass, Duration: 1234 * time.Millisecond},
		{Name: "quota_429", Verdict: Fail, Reason: "differs", Duration: 5 * time.Millisecond},
	}
	tests := []struct {
		name  string
		write func(*bytes.Buffer) error
	}{
		{"json", func(b *bytes.Buffer) error { return JSON(b, sample) }},
		{"json_empty", func(b *bytes.Buffer) error { return JSON(b, nil) }},
		{"json_durations", func(b *bytes.Buffer) error { return JSON(b, timed) }},
		{"junit", func(b *bytes.Buffer) error { return JUnit(b, "cassettes", sample) }},
		{"junit_durations", func(b *bytes.Buffer) error { return JUnit(b, "cassettes", timed) }},
		{"table", func(b *bytes.Buffer) error { return Table(b, sample[:3]) }},
	}
	g := goldie.New(t, goldie.WithFixtureDir("testdata"), goldie.WithNameSuffix(".golden"))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := tt.write(&b); err != nil {
				t.Fatal(err)
			}
			g.Assert(t, tt.name, b.Bytes())
		})
	}
}

// TestTableMatchesTheCommand checks the table is the one `openmax replay
// DIR` has always printed.
func TestTableMatchesTheCommand(t *testing.T) {
	rows := []Row{{Name: "a", Verdict: Pass}, {Name: "b", Verdict: Fail, Reason: "differs from x.golden"}, {Name: "c", Verdict: Updated}}
	var b bytes.Buffer
	if err := Table(&b, rows); err != nil {
		t.Fatal(err)
	}
	want := "a                                        pass\n" +
		"b                                        FAIL  differs from x.golden\n" +
		"c                                        updated\n" +
		"2 passed, 1 failed\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}

type failWriter struct{}

var errFull = errors.New("disk full")

func (failWriter) Write([]byte) (int, error) { return 0, errFull }

// TestErrors checks bad verdicts are refused and write failures wrapped.
func TestErrors(t *testing.T) {
	bad := []Row{{Name: "x", Verdict: "maybe"}}
	writers := []struct {
		name string
		fn   func(w *bytes.Buffer, rows []Row) error
		fail func() error
	}{
		{"junit", func(w *bytes.Buffer, rows []Row) error { return JUnit(w, "s", rows) }, func() error { return JUnit(failWriter{}, "s", sample) }},
		{"json", func(w *bytes.Buffer, rows []Row) error { return JSON(w, rows) }, func() error { return JSON(failWriter{}, sample) }},
		{"table", func(w *bytes.Buffer, rows []Row) error { return Table(w, rows) }, func() error { return Table(failWriter{}, sample) }},
	}
	for _, tt := range writers {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := tt.fn(&b, bad); err == nil || !strings.Contains(err.Error(), `unknown verdict "maybe"`) || b.Len() != 0 {
				t.Errorf("bad verdict: err %v, wrote %q", err, b.String())
			}
			if err := tt.fail(); !errors.Is(err, errFull) {
				t.Errorf("write failure: %v, want it wrapped", err)
			}
		})
	}
}
