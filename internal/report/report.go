// Package report writes the results of `openmax replay DIR` for machines and
// people: one Row per cassette, written as JUnit XML (for a CI test tab), as
// one JSON document, or as the plain table the command prints.
//
// The JSON document (format "openmax-replay-report/1") is one object:
//
//	{
//	  "format": "openmax-replay-report/1",
//	  "total": 3,       // rows
//	  "passed": 1,      // verdict "pass"
//	  "failed": 1,      // verdict "fail"
//	  "updated": 1,     // verdict "updated" (the golden file was rewritten)
//	  "results": [
//	    {"name": "story", "file": "cassettes/story.yaml", "verdict": "pass"},
//	    {"name": "quota", "verdict": "fail", "reason": "differs from golden/quota.golden", "diff": "--- ...", "duration_seconds": 0.012}
//	  ]
//	}
//
// results keeps the rows' order. diff is the unified diff against the
// golden file of a row that differs from it, and file the cassette's path
// (both added members: the format's number stays). reason and diff are omitted when empty and
// duration_seconds when the row has no duration, so a report without
// durations is byte-for-byte reproducible. The field names are stable: a
// change to them bumps the format's number.
package report

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// Format names the JSON document's layout.
const Format = "openmax-replay-report/1"

// Verdict is the outcome of one replay.
type Verdict string

// Verdicts.
const (
	Pass    Verdict = "pass"    // the transcript matched its golden file
	Fail    Verdict = "fail"    // it did not, or the replay failed
	Updated Verdict = "updated" // the golden file was rewritten from it
)

// Row is the result of one cassette.
type Row struct {
	Name string
	// File is the cassette's path (empty leaves it out): JUnit's file
	// attribute, which CircleCI's split by timings keys on.
	File    string
	Verdict Verdict
	// Reason says why a row failed (or anything worth saying about it);
	// it may span lines. Empty means nothing to say.
	Reason string
	// Diff is the unified diff of a transcript that differs from its
	// golden file (empty otherwise): the JUnit failure and the JSON result
	// carry it, so a CI page shows what changed; the table leaves it out.
	Diff string
	// Duration is how long the replay took; zero leaves it out of every
	// output, which keeps them deterministic.
	Duration time.Duration
}

// Counts returns how many rows have each verdict.
func Counts(rows []Row) (passed, failed, updated int) {
	for _, r := range rows {
		switch r.Verdict {
		case Pass:
			passed++
		case Fail:
			failed++
		case Updated:
			updated++
		}
	}
	return passed, failed, updated
}

// check rejects a row whose verdict is none of the three.
func check(rows []Row) error {
	for i, r := range rows {
		switch r.Verdict {
		case Pass, Fail, Updated:
		default:
			return fmt.Errorf("report: row %d (%q): unknown verdict %q (want pass, fail or updated)", i+1, r.Name, r.Verdict)
		}
	}
	return nil
}

// seconds formats d for a report, or "" when d is zero.
func seconds(d time.Duration) string {
	if d <= 0 {
		return ""
	}
	return strconv.FormatFloat(d.Seconds(), 'f', 3, 64)
}

// ---- JUnit ----

type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Time     string       `xml:"time,attr,omitempty"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Errors   int         `xml:"errors,attr"`
	Skipped  int         `xml:"skipped,attr"`
	Time     string      `xml:"time,attr,omitempty"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	File      string        `xml:"file,attr,omitempty"`
	Time      string        `xml:"time,attr,omitempty"`
	Skipped   *junitFailure `xml:"skipped,omitempty"`
	Error     *junitFailure `xml:"error,omitempty"`
	Failure   *junitFailure `xml:"failure,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
	SystemErr string        `xml:"system-err,omitempty"`
}

type junitFailure struct {
	Message string `xml:"message,attr,omitempty"`
	Type    string `xml:"type,attr,omitempty"`
	Text    string `xml:",chardata"`
}

// DefaultSuite names the suite when JUnit is given an empty name.
const DefaultSuite = "openmax replay"

// JUnit writes rows as JUnit XML: a testsuites element holding one
// testsuite named suite, with its tests and failures counts, and one
// testcase per row (classname suite). A failed row carries a failure element
// whose message is the reason's first line and whose text is the whole
// reason; an updated row passes and says so in system-out. Times (seconds)
// appear only for rows with a duration.
func JUnit(w io.Writer, suite string, rows []Row) error {
	if err := check(rows); err != nil {
		return err
	}
	if suite == "" {
		suite = DefaultSuite
	}
	_, failed, _ := Counts(rows)
	s := junitSuite{Name: suite, Tests: len(rows), Failures: failed}
	var total time.Duration
	for _, r := range rows {
		c := junitCase{Name: r.Name, Classname: suite, File: r.File, Time: seconds(r.Duration)}
		total += r.Duration
		switch r.Verdict {
		case Fail:
			msg, _, _ := strings.Cut(r.Reason, "\n")
			if msg == "" {
				msg = "failed"
			}
			text := r.Reason
			if r.Diff != "" {
				text += "\n" + r.Diff
			}
			c.Failure = &junitFailure{Message: msg, Type: string(Fail), Text: text}
		case Updated:
			c.SystemOut = "golden file updated"
			if r.Reason != "" {
				c.SystemOut += ": " + r.Reason
			}
		case Pass:
			c.SystemOut = r.Reason
		}
		s.Cases = append(s.Cases, c)
	}
	s.Time = seconds(total)
	doc := junitSuites{Name: suite, Tests: s.Tests, Failures: s.Failures, Time: s.Time, Suites: []junitSuite{s}}
	return writeJUnit(w, doc)
}

// writeJUnit writes doc as indented XML with its header and a final
// newline.
func writeJUnit(w io.Writer, doc junitSuites) error {
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return fmt.Errorf("report: write JUnit: %w", err)
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return fmt.Errorf("report: write JUnit: %w", err)
	}
	if _, err := io.WriteString(w, "\n"); err != nil {
		return fmt.Errorf("report: write JUnit: %w", err)
	}
	return nil
}

// ---- JSON ----

// Document is the JSON report; see the package documentation.
type Document struct {
	Format  string   `json:"format"`
	Total   int      `json:"total"`
	Passed  int      `json:"passed"`
	Failed  int      `json:"failed"`
	Updated int      `json:"updated"`
	Results []Result `json:"results"`
}

// Result is one row of the JSON report.
type Result struct {
	Name            string   `json:"name"`
	File            string   `json:"file,omitempty"`
	Verdict         Verdict  `json:"verdict"`
	Reason          string   `json:"reason,omitempty"`
	Diff            string   `json:"diff,omitempty"`
	DurationSeconds *float64 `json:"duration_seconds,omitempty"`
}

// JSON writes rows as one indented JSON document (see the package
// documentation), followed by a newline.
func JSON(w io.Writer, rows []Row) error {
	if err := check(rows); err != nil {
		return err
	}
	doc := Document{Format: Format, Total: len(rows), Results: make([]Result, 0, len(rows))}
	doc.Passed, doc.Failed, doc.Updated = Counts(rows)
	for _, r := range rows {
		res := Result{Name: r.Name, File: r.File, Verdict: r.Verdict, Reason: r.Reason, Diff: r.Diff}
		if s := seconds(r.Duration); s != "" {
			f, _ := strconv.ParseFloat(s, 64)
			res.DurationSeconds = &f
		}
		doc.Results = append(doc.Results, res)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return fmt.Errorf("report: write JSON: %w", err)
	}
	return nil
}

// ---- the table ----

// Table writes the table `openmax replay DIR` prints: each row's TableLine,
// then Totals.
func Table(w io.Writer, rows []Row) error {
	if err := check(rows); err != nil {
		return err
	}
	var b strings.Builder
	for _, r := range rows {
		b.WriteString(r.TableLine())
	}
	b.WriteString(Totals(rows))
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("report: write table: %w", err)
	}
	return nil
}

// TableLine is the row's line of the table, newline included: its name
// padded to 40 columns, then "pass", "updated", or "FAIL" and the reason.
// A command prints it as each replay finishes.
func (r Row) TableLine() string {
	verdict := string(r.Verdict)
	if r.Verdict == Fail {
		verdict = "FAIL  " + r.Reason
	}
	return fmt.Sprintf("%-40s %s\n", r.Name, verdict)
}

// Totals is the table's last line, "N passed, M failed" (updated rows
// count as passed), newline included.
func Totals(rows []Row) string {
	_, failed, _ := Counts(rows)
	return fmt.Sprintf("%d passed, %d failed\n", len(rows)-failed, failed)
}
