package main

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
)

// validateJUnit checks data against the structure of the JUnit XML schema
// CI systems read (the Ant/Jenkins "JUnit 10" schema and the attributes
// CircleCI and GitLab add), written out here as rules rather than vendored:
//
//   - the root is <testsuites> (name, tests, failures, errors, skipped,
//     time) holding only <testsuite>, or a single <testsuite>;
//   - a <testsuite> has name and tests, may have failures, errors,
//     skipped, time, timestamp, hostname, id, package, file, and holds
//     <properties>, <testcase>, <system-out>, <system-err> only;
//   - a <testcase> has name and classname, may have time, file, line,
//     assertions, status, and holds <skipped>, <error>, <failure>,
//     <system-out>, <system-err> only; <failure> and <error> may carry
//     message and type;
//   - counts are non-negative integers, times non-negative decimals;
//   - a suite's tests, failures, errors and skipped equal its testcases',
//     and the root's totals equal the sum of its suites'.
func validateJUnit(data []byte) error {
	dec := xml.NewDecoder(bytes.NewReader(data))
	var root *xml.StartElement
	for root == nil {
		tok, err := dec.Token()
		if err != nil {
			return fmt.Errorf("no root element: %w", err)
		}
		if se, ok := tok.(xml.StartElement); ok {
			root = &se
		}
	}
	type counts struct{ tests, failures, errors, skipped int }
	var total counts
	suite := func(se xml.StartElement) (counts, error) {
		if err := attrs(se, []string{"name", "tests"}, []string{"failures", "errors", "skipped", "time", "timestamp", "hostname", "id", "package", "file"}); err != nil {
			return counts{}, err
		}
		var got counts
		for {
			tok, err := dec.Token()
			if err != nil {
				return got, fmt.Errorf("testsuite: %w", err)
			}
			if _, ok := tok.(xml.EndElement); ok {
				break
			}
			child, ok := tok.(xml.StartElement)
			if !ok {
				continue
			}
			switch child.Name.Local {
			case "testcase":
				if err := attrs(child, []string{"name", "classname"}, []string{"time", "file", "line", "assertions", "status"}); err != nil {
					return got, err
				}
				got.tests++
				kinds, err := caseChildren(dec)
				if err != nil {
					return got, err
				}
				switch {
				case slices.Contains(kinds, "failure"):
					got.failures++
				case slices.Contains(kinds, "error"):
					got.errors++
				case slices.Contains(kinds, "skipped"):
					got.skipped++
				}
			case "properties", "system-out", "system-err":
				if err := dec.Skip(); err != nil {
					return got, err
				}
			default:
				return got, fmt.Errorf("<%s> inside <testsuite>", child.Name.Local)
			}
		}
		for _, c := range []struct {
			attr string
			n    int
		}{{"tests", got.tests}, {"failures", got.failures}, {"errors", got.errors}, {"skipped", got.skipped}} {
			if v, ok := attr(se, c.attr); ok && v != strconv.Itoa(c.n) {
				return got, fmt.Errorf("testsuite %s=%q but it holds %d", c.attr, v, c.n)
			}
		}
		return got, nil
	}
	switch root.Name.Local {
	case "testsuite":
		if _, err := suite(*root); err != nil {
			return err
		}
		return trailing(dec)
	case "testsuites":
	default:
		return fmt.Errorf("root <%s>: want <testsuites> or <testsuite>", root.Name.Local)
	}
	if err := attrs(*root, nil, []string{"name", "tests", "failures", "errors", "skipped", "time", "disabled"}); err != nil {
		return err
	}
	for {
		tok, err := dec.Token()
		if err != nil {
			return fmt.Errorf("testsuites: %w", err)
		}
		if _, ok := tok.(xml.EndElement); ok {
			break
		}
		se, ok := tok.(xml.StartElement)
		if !ok {
			continue
		}
		if se.Name.Local != "testsuite" {
			return fmt.Errorf("<%s> inside <testsuites>", se.Name.Local)
		}
		c, err := suite(se)
		if err != nil {
			return err
		}
		total.tests += c.tests
		total.failures += c.failures
		total.errors += c.errors
		total.skipped += c.skipped
	}
	for _, c := range []struct {
		attr string
		n    int
	}{{"tests", total.tests}, {"failures", total.failures}, {"errors", total.errors}} {
		if v, ok := attr(*root, c.attr); ok && v != strconv.Itoa(c.n) {
			return fmt.Errorf("testsuites %s=%q but its suites hold %d", c.attr, v, c.n)
		}
	}
	return trailing(dec)
}

// trailing accepts only blank text and comments after the root element.
func trailing(dec *xml.Decoder) error {
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if cd, ok := tok.(xml.CharData); ok && len(bytes.TrimSpace(cd)) == 0 {
			continue
		}
		if _, ok := tok.(xml.Comment); ok {
			continue
		}
		return fmt.Errorf("content after the root element")
	}
}

var (
	junitCount = regexp.MustCompile(`^[0-9]+$`)
	junitTime  = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?$`)
)

// attrs checks se has every required attribute, no other than the
// optional ones, and well-formed counts and times.
func attrs(se xml.StartElement, required, optional []string) error {
	for _, r := range required {
		if _, ok := attr(se, r); !ok {
			return fmt.Errorf("<%s> lacks %s", se.Name.Local, r)
		}
	}
	for _, a := range se.Attr {
		n := a.Name.Local
		if !slices.Contains(required, n) && !slices.Contains(optional, n) {
			return fmt.Errorf("<%s> has an attribute %s the schema does not allow", se.Name.Local, n)
		}
		switch n {
		case "tests", "failures", "errors", "skipped", "assertions", "line", "disabled":
			if !junitCount.MatchString(a.Value) {
				return fmt.Errorf("<%s %s=%q>: not a count", se.Name.Local, n, a.Value)
			}
		case "time":
			if !junitTime.MatchString(a.Value) {
				return fmt.Errorf("<%s time=%q>: not a decimal number of seconds", se.Name.Local, a.Value)
			}
		}
	}
	return nil
}

func attr(se xml.StartElement, name string) (string, bool) {
	for _, a := range se.Attr {
		if a.Name.Local == name {
			return a.Value, true
		}
	}
	return "", false
}

// caseChildren reads a testcase's children up to its end and returns
// their names.
func caseChildren(dec *xml.Decoder) ([]string, error) {
	var kinds []string
	for {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("testcase: %w", err)
		}
		switch t := tok.(type) {
		case xml.EndElement:
			return kinds, nil
		case xml.StartElement:
			switch t.Name.Local {
			case "failure", "error":
				if err := attrs(t, nil, []string{"message", "type"}); err != nil {
					return nil, err
				}
			case "skipped":
				if err := attrs(t, nil, []string{"message"}); err != nil {
					return nil, err
				}
			case "system-out", "system-err":
			default:
				return nil, fmt.Errorf("<%s> inside <testcase>", t.Name.Local)
			}
			kinds = append(kinds, t.Name.Local)
			if err := dec.Skip(); err != nil {
				return nil, err
			}
		}
	}
}
