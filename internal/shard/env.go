package shard

import (
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
)

// EngineNames lists the environments Detect reads, for help texts.
const EngineNames = "OPENMAX_SHARD=K/N, Bazel's TEST_SHARD_INDEX/TEST_TOTAL_SHARDS, CircleCI's CIRCLE_NODE_INDEX/CIRCLE_NODE_TOTAL, " +
	"Buildkite's BUILDKITE_PARALLEL_JOB/BUILDKITE_PARALLEL_JOB_COUNT, GitLab's CI_NODE_INDEX/CI_NODE_TOTAL (1-based), " +
	"a Kubernetes Indexed Job's JOB_COMPLETION_INDEX with --shards N"

// engine is one CI engine's pair of variables.
type engine struct {
	name         string
	index, total string
	oneBased     bool
}

// engines are read in this order; the first whose index is set wins.
var engines = []engine{
	{"bazel", "TEST_SHARD_INDEX", "TEST_TOTAL_SHARDS", false},
	{"circleci", "CIRCLE_NODE_INDEX", "CIRCLE_NODE_TOTAL", false},
	{"buildkite", "BUILDKITE_PARALLEL_JOB", "BUILDKITE_PARALLEL_JOB_COUNT", false},
	{"gitlab", "CI_NODE_INDEX", "CI_NODE_TOTAL", true},
	{"kubernetes", "JOB_COMPLETION_INDEX", "", false},
}

// Env is what the environment says about the run.
type Env struct {
	Spec Spec
	// Source names where Spec came from: "flag", "OPENMAX_SHARD", an
	// engine ("bazel", "circleci", "buildkite", "gitlab", "kubernetes"),
	// or "" for the whole run.
	Source string

	// Bazel's test protocol, set whenever Bazel runs the test (sharded
	// or not).
	//
	// StatusFile is TEST_SHARD_STATUS_FILE: touched to tell Bazel the
	// test understands sharding.
	StatusFile string
	// XMLOutput is XML_OUTPUT_FILE: where Bazel wants the JUnit report.
	XMLOutput string
	// OutputsDir is TEST_UNDECLARED_OUTPUTS_DIR: where artifacts go.
	OutputsDir string
	// TestOnly is TESTBRIDGE_TEST_ONLY (bazel test --test_filter): a
	// regular expression the keys run must match.
	TestOnly string
}

// Detect resolves the shard: flag ("K/N", or "") first, then
// OPENMAX_SHARD, then the engines' variables in the order of EngineNames.
// shards is the total given apart (--shards; 0 if not): it is required by
// a Kubernetes Indexed Job, and when given must agree with the engine's.
func Detect(flag string, shards int, getenv func(string) string) (Env, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	e := Env{
		StatusFile: getenv("TEST_SHARD_STATUS_FILE"),
		XMLOutput:  getenv("XML_OUTPUT_FILE"),
		OutputsDir: getenv("TEST_UNDECLARED_OUTPUTS_DIR"),
		TestOnly:   getenv("TESTBRIDGE_TEST_ONLY"),
	}
	if shards < 0 {
		return e, fmt.Errorf("%w: --shards %d: want at least 1", ErrSpec, shards)
	}
	if e.TestOnly != "" {
		if _, err := regexp.Compile(e.TestOnly); err != nil {
			return e, fmt.Errorf("%w: TESTBRIDGE_TEST_ONLY: %w", ErrSpec, err)
		}
	}
	agree := func(s Spec, from string) (Env, error) {
		if shards > 0 && max(s.Total, 1) != shards {
			return e, fmt.Errorf("%w: %s says %d shards, --shards says %d", ErrSpec, from, max(s.Total, 1), shards)
		}
		e.Spec, e.Source = s, from
		return e, nil
	}
	if flag != "" {
		s, err := Parse(flag)
		if err != nil {
			return e, fmt.Errorf("--shard: %w", err)
		}
		return agree(s, "flag")
	}
	if v := getenv("OPENMAX_SHARD"); v != "" {
		s, err := Parse(v)
		if err != nil {
			return e, fmt.Errorf("OPENMAX_SHARD: %w", err)
		}
		return agree(s, "OPENMAX_SHARD")
	}
	for _, en := range engines {
		iv := getenv(en.index)
		if iv == "" {
			continue
		}
		idx, err := strconv.Atoi(strings.TrimSpace(iv))
		if err != nil {
			return e, fmt.Errorf("%w: %s=%q is not a whole number", ErrSpec, en.index, iv)
		}
		if en.oneBased {
			idx--
		}
		var total int
		switch {
		case en.total == "":
			if shards == 0 {
				return e, fmt.Errorf("%w: %s=%s gives the index only: pass the number of shards with --shards N (the Job's completions)", ErrSpec, en.index, iv)
			}
			total = shards
		default:
			tv := getenv(en.total)
			if tv == "" {
				return e, fmt.Errorf("%w: %s is set but %s is not", ErrSpec, en.index, en.total)
			}
			if total, err = strconv.Atoi(strings.TrimSpace(tv)); err != nil {
				return e, fmt.Errorf("%w: %s=%q is not a whole number", ErrSpec, en.total, tv)
			}
		}
		s, err := New(idx, total)
		if err != nil {
			return e, fmt.Errorf("%s=%s %s=%d: %w", en.index, iv, en.total, total, err)
		}
		return agree(s, en.name)
	}
	if shards > 1 {
		return e, fmt.Errorf("%w: --shards %d without a shard index (--shard K/N, or an engine's index variable)", ErrSpec, shards)
	}
	return e, nil
}

// Touch creates Bazel's shard status file, if the run has one, telling
// Bazel the test shards itself.
func (e Env) Touch() error {
	if e.StatusFile == "" {
		return nil
	}
	f, err := os.OpenFile(e.StatusFile, os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("shard: touch TEST_SHARD_STATUS_FILE: %w", err)
	}
	return f.Close()
}

// Filter keeps the keys TESTBRIDGE_TEST_ONLY matches (all without one),
// in order.
func (e Env) Filter(keys []string) []string {
	if e.TestOnly == "" {
		return keys
	}
	re := regexp.MustCompile(e.TestOnly) // checked by Detect
	var out []string
	for _, k := range keys {
		if re.MatchString(k) {
			out = append(out, k)
		}
	}
	return out
}

// Describe is a line for stderr saying which shard runs and why, "" for
// the whole run.
func (e Env) Describe(picked, of int) string {
	if !e.Spec.Sharded() {
		return ""
	}
	return fmt.Sprintf("shard %s (from %s): %d of %d", e.Spec, e.Source, picked, of)
}

// ReadJUnit reads the testcase durations of a JUnit report: the time of
// each testcase by name (summed when a name repeats, as a report merged
// from several suites may hold). Testcases without a time are left out.
func ReadJUnit(r io.Reader) (Timings, error) {
	t := Timings{}
	dec := xml.NewDecoder(r)
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return t, nil
		}
		if err != nil {
			return nil, fmt.Errorf("shard: read JUnit timings: %w", err)
		}
		se, ok := tok.(xml.StartElement)
		if !ok || se.Name.Local != "testcase" {
			continue
		}
		var name, tm string
		for _, a := range se.Attr {
			switch a.Name.Local {
			case "name":
				name = a.Value
			case "time":
				tm = a.Value
			}
		}
		if name == "" || tm == "" {
			continue
		}
		d, err := strconv.ParseFloat(strings.ReplaceAll(tm, ",", ""), 64)
		if err != nil || d < 0 {
			return nil, fmt.Errorf("shard: read JUnit timings: testcase %q: time %q is not a number of seconds", name, tm)
		}
		t[name] += d
	}
}

// ReadTimingsFile is ReadJUnit of a file; "" is no timings.
func ReadTimingsFile(path string) (Timings, error) {
	if path == "" {
		return nil, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("shard: %w", err)
	}
	defer f.Close()
	return ReadJUnit(f)
}
