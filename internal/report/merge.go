package report

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"time"
)

// A shard of a split run writes its own report; the functions here join
// the shards' reports into the one the unsharded run writes: the union of
// their testcases (results), each once, ordered by file, then name, then
// classname (the unsharded run's order: cassettes by path), with the
// counts recomputed. A testcase in two reports is an error: the shards of
// one run are disjoint.

// Input is one report to merge and the name errors call it by.
type Input struct {
	Name string
	Data []byte
}

// IsJUnit reports whether data looks like XML (a JUnit report) rather
// than a JSON document.
func IsJUnit(data []byte) bool {
	return bytes.HasPrefix(bytes.TrimSpace(data), []byte("<"))
}

// caseKey orders and identifies a testcase.
type caseKey struct{ file, name, class string }

func (k caseKey) less(o caseKey) bool {
	if k.file != o.file {
		return k.file < o.file
	}
	if k.name != o.name {
		return k.name < o.name
	}
	return k.class < o.class
}

// MergeJUnit writes the JUnit report joining ins (each a testsuites or a
// single testsuite document): one testsuite holding every testcase. Its
// name is the suites' name when they all share one, else suite (or
// DefaultSuite when suite is empty). Times are kept and summed.
func MergeJUnit(w io.Writer, suite string, ins []Input) (passed, failed int, err error) {
	var cases []junitCase
	names := map[string]bool{}
	seen := map[caseKey]string{}
	for _, in := range ins {
		var doc junitSuites
		dec := xml.NewDecoder(bytes.NewReader(in.Data))
		start, err := rootElement(dec)
		if err != nil {
			return 0, 0, fmt.Errorf("report: merge %s: %w", in.Name, err)
		}
		switch start.Name.Local {
		case "testsuites":
			err = dec.DecodeElement(&doc, &start)
		case "testsuite":
			var s junitSuite
			err = dec.DecodeElement(&s, &start)
			doc.Suites = []junitSuite{s}
		default:
			err = fmt.Errorf("root element <%s>: want <testsuites> or <testsuite>", start.Name.Local)
		}
		if err != nil {
			return 0, 0, fmt.Errorf("report: merge %s: %w", in.Name, err)
		}
		for _, s := range doc.Suites {
			names[s.Name] = true
			for _, c := range s.Cases {
				if c.Name == "" {
					return 0, 0, fmt.Errorf("report: merge %s: a testcase of suite %q has no name", in.Name, s.Name)
				}
				if c.Time != "" {
					if _, err := strconv.ParseFloat(c.Time, 64); err != nil {
						return 0, 0, fmt.Errorf("report: merge %s: testcase %q: time %q is not a number of seconds", in.Name, c.Name, c.Time)
					}
				}
				k := caseKey{c.File, c.Name, c.Classname}
				if prev, dup := seen[k]; dup {
					return 0, 0, fmt.Errorf("report: merge: testcase %q (classname %q, file %q) is in both %s and %s: the shards of one run are disjoint", c.Name, c.Classname, c.File, prev, in.Name)
				}
				seen[k] = in.Name
				cases = append(cases, c)
			}
		}
	}
	sort.SliceStable(cases, func(i, j int) bool {
		return caseKey{cases[i].File, cases[i].Name, cases[i].Classname}.less(caseKey{cases[j].File, cases[j].Name, cases[j].Classname})
	})
	if len(names) == 1 {
		for n := range names {
			suite = n
		}
	} else if suite == "" {
		suite = DefaultSuite
	}
	s := junitSuite{Name: suite, Tests: len(cases), Cases: cases}
	var total float64
	timed := false
	for _, c := range cases {
		switch {
		case c.Failure != nil:
			s.Failures++
		case c.Error != nil:
			s.Errors++
		case c.Skipped != nil:
			s.Skipped++
		}
		if c.Time != "" {
			d, _ := strconv.ParseFloat(c.Time, 64)
			total += d
			timed = true
		}
	}
	if timed {
		s.Time = strconv.FormatFloat(total, 'f', 3, 64)
	}
	doc := junitSuites{Name: suite, Tests: s.Tests, Failures: s.Failures, Errors: s.Errors, Time: s.Time, Suites: []junitSuite{s}}
	if err := writeJUnit(w, doc); err != nil {
		return 0, 0, err
	}
	return s.Tests - s.Failures - s.Errors, s.Failures + s.Errors, nil
}

// rootElement reads up to the document's first element.
func rootElement(dec *xml.Decoder) (xml.StartElement, error) {
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return xml.StartElement{}, fmt.Errorf("no XML element")
		}
		if err != nil {
			return xml.StartElement{}, err
		}
		if se, ok := tok.(xml.StartElement); ok {
			return se, nil
		}
	}
}

// MergeJSON reads the JSON reports ins (format Format) and returns their
// rows joined, in the unsharded run's order; JSON and JUnit write them.
func MergeJSON(ins []Input) ([]Row, error) {
	type keyed struct {
		k   caseKey
		row Row
	}
	var all []keyed
	seen := map[caseKey]string{}
	for _, in := range ins {
		var doc Document
		dec := json.NewDecoder(bytes.NewReader(in.Data))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&doc); err != nil {
			return nil, fmt.Errorf("report: merge %s: %w", in.Name, err)
		}
		if doc.Format != Format {
			return nil, fmt.Errorf("report: merge %s: format %q, want %q", in.Name, doc.Format, Format)
		}
		if len(doc.Results) != doc.Total {
			return nil, fmt.Errorf("report: merge %s: total %d but %d results", in.Name, doc.Total, len(doc.Results))
		}
		for _, r := range doc.Results {
			row := Row{Name: r.Name, File: r.File, Verdict: r.Verdict, Reason: r.Reason, Diff: r.Diff}
			if r.DurationSeconds != nil {
				row.Duration = secondsDuration(*r.DurationSeconds)
			}
			k := caseKey{r.File, r.Name, ""}
			if prev, dup := seen[k]; dup {
				return nil, fmt.Errorf("report: merge: result %q (file %q) is in both %s and %s: the shards of one run are disjoint", r.Name, r.File, prev, in.Name)
			}
			seen[k] = in.Name
			all = append(all, keyed{k, row})
		}
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].k.less(all[j].k) })
	rows := make([]Row, len(all))
	for i, a := range all {
		rows[i] = a.row
	}
	if err := check(rows); err != nil {
		return nil, err
	}
	return rows, nil
}

// secondsDuration is s seconds as a Duration, rounded to the millisecond
// the reports print.
func secondsDuration(s float64) time.Duration {
	return time.Duration(math.Round(s*1000)) * time.Millisecond
}
