package shard

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/openmax/openmax/internal/rapidchecks"
)

func TestParse(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want Spec
		err  string
	}{
		{"1/4", Spec{0, 4}, ""},
		{"4/4", Spec{3, 4}, ""},
		{" 2/3 ", Spec{1, 3}, ""},
		{"1/1", Whole, ""},
		{"0/4", Spec{}, "K must be from 1 to 4"},
		{"5/4", Spec{}, "K must be from 1 to 4"},
		{"1/0", Spec{}, "want at least 1"},
		{"2", Spec{}, "is not K/N"},
		{"a/b", Spec{}, "whole numbers"},
	} {
		got, err := Parse(tt.in)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("Parse(%q) = %v, %v; want error with %q", tt.in, got, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("Parse(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
		if again, _ := Parse(got.String()); again != got {
			t.Errorf("String %q does not parse back to %v", got.String(), got)
		}
	}
}

// TestPartitionRapid: over random key sets, shard counts and timings
// (none, partial, full), the N shards' picks are disjoint, their union is
// every key, the plan does not depend on the keys' order, and without
// timings a key's shard does not depend on the other keys.
func TestPartitionRapid(t *testing.T) {
	rapidchecks.Use(t, rapidchecks.Pick(1000, 1000))
	rapid.Check(t, func(t *rapid.T) {
		keys := rapid.SliceOfDistinct(rapid.StringMatching(`[a-z0-9_./-]{1,12}`), rapid.ID[string]).Draw(t, "keys")
		n := rapid.IntRange(1, 12).Draw(t, "n")
		var tm Timings
		if rapid.Bool().Draw(t, "timed") {
			tm = Timings{}
			for _, k := range keys {
				if rapid.Bool().Draw(t, "known") {
					tm[k] = rapid.Float64Range(0, 100).Draw(t, "d")
				}
			}
		}
		seen := map[string]int{}
		for i := range n {
			s, err := New(i, n)
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range s.Pick(keys, tm) {
				if prev, dup := seen[k]; dup {
					t.Fatalf("key %q in shards %d and %d", k, prev+1, i+1)
				}
				seen[k] = i
			}
		}
		if len(seen) != len(keys) {
			t.Fatalf("the shards hold %d of %d keys", len(seen), len(keys))
		}
		rev := slices.Clone(keys)
		slices.Reverse(rev)
		a, b := Plan(keys, n, tm), Plan(rev, n, tm)
		for _, k := range keys {
			if a[k] != b[k] {
				t.Fatalf("key %q: shard %d, reordered %d", k, a[k], b[k])
			}
			if tm == nil && a[k] != Of(k, n) {
				t.Fatalf("key %q: shard %d, hash %d", k, a[k], Of(k, n))
			}
		}
	})
}

// TestTimingsBalance: with timings, one slow key gets a shard of its own
// while the hash alone may put it beside others.
func TestTimingsBalance(t *testing.T) {
	keys := []string{"huge", "a", "b", "c", "d", "e", "f"}
	tm := Timings{"huge": 60, "a": 10, "b": 10, "c": 10, "d": 10, "e": 10, "f": 10}
	plan := Plan(keys, 2, tm)
	load := make([]float64, 2)
	for k, s := range plan {
		load[s] += tm[k]
	}
	if load[0] != 60 || load[1] != 60 {
		t.Errorf("loads %v, want 60 and 60 (plan %v)", load, plan)
	}
	// Keys unknown to the report count as the mean of the known ones.
	plan = Plan([]string{"x", "y", "known"}, 3, Timings{"known": 5})
	if len(map[int]bool{plan["x"]: true, plan["y"]: true, plan["known"]: true}) != 3 {
		t.Errorf("three keys of equal weight on three shards: %v", plan)
	}
}

func TestReadJUnit(t *testing.T) {
	const doc = `<?xml version="1.0"?>
<testsuites><testsuite name="s">
 <testcase name="a" classname="s" time="1.500"/>
 <testcase name="b" classname="s"/>
 <testcase name="a" classname="t" time="0.5"/>
 <testcase name="c" classname="s" time="1,000.25"/>
</testsuite></testsuites>`
	got, err := ReadJUnit(strings.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	want := Timings{"a": 2, "c": 1000.25}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if _, err := ReadJUnit(strings.NewReader(`<testcase name="x" time="soon"/>`)); err == nil || !strings.Contains(err.Error(), `"soon"`) {
		t.Errorf("a bad time: %v", err)
	}
	if _, err := ReadJUnit(strings.NewReader(`<testsuites><testcase`)); err == nil {
		t.Error("truncated XML read without an error")
	}
	if tm, err := ReadTimingsFile(""); tm != nil || err != nil {
		t.Errorf("no file: %v %v", tm, err)
	}
	if _, err := ReadTimingsFile(filepath.Join(t.TempDir(), "none.xml")); err == nil {
		t.Error("a missing timings file read without an error")
	}
}

func TestDetect(t *testing.T) {
	for _, tt := range []struct {
		name   string
		flag   string
		shards int
		env    map[string]string
		want   Spec
		source string
		err    string
	}{
		{"nothing", "", 0, nil, Whole, "", ""},
		{"flag", "2/3", 0, map[string]string{"CIRCLE_NODE_INDEX": "0", "CIRCLE_NODE_TOTAL": "3"}, Spec{1, 3}, "flag", ""},
		{"openmax", "", 0, map[string]string{"OPENMAX_SHARD": "3/5"}, Spec{2, 5}, "OPENMAX_SHARD", ""},
		{"bazel", "", 0, map[string]string{"TEST_SHARD_INDEX": "3", "TEST_TOTAL_SHARDS": "4"}, Spec{3, 4}, "bazel", ""},
		{"circleci", "", 0, map[string]string{"CIRCLE_NODE_INDEX": "0", "CIRCLE_NODE_TOTAL": "2"}, Spec{0, 2}, "circleci", ""},
		{"buildkite", "", 0, map[string]string{"BUILDKITE_PARALLEL_JOB": "4", "BUILDKITE_PARALLEL_JOB_COUNT": "5"}, Spec{4, 5}, "buildkite", ""},
		{"gitlab one-based", "", 0, map[string]string{"CI_NODE_INDEX": "1", "CI_NODE_TOTAL": "3"}, Spec{0, 3}, "gitlab", ""},
		{"gitlab zero", "", 0, map[string]string{"CI_NODE_INDEX": "0", "CI_NODE_TOTAL": "3"}, Spec{}, "", "K must be from 1 to 3"},
		{"kubernetes", "", 6, map[string]string{"JOB_COMPLETION_INDEX": "5"}, Spec{5, 6}, "kubernetes", ""},
		{"kubernetes without total", "", 0, map[string]string{"JOB_COMPLETION_INDEX": "5"}, Spec{}, "", "--shards N"},
		{"index without total", "", 0, map[string]string{"CIRCLE_NODE_INDEX": "1"}, Spec{}, "", "CIRCLE_NODE_TOTAL is not"},
		{"not a number", "", 0, map[string]string{"BUILDKITE_PARALLEL_JOB": "x", "BUILDKITE_PARALLEL_JOB_COUNT": "2"}, Spec{}, "", "not a whole number"},
		{"shards disagree", "", 3, map[string]string{"TEST_SHARD_INDEX": "0", "TEST_TOTAL_SHARDS": "4"}, Spec{}, "", "--shards says 3"},
		{"shards alone", "", 3, nil, Spec{}, "", "without a shard index"},
		{"bad filter", "", 0, map[string]string{"TESTBRIDGE_TEST_ONLY": "("}, Spec{}, "", "TESTBRIDGE_TEST_ONLY"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e, err := Detect(tt.flag, tt.shards, func(k string) string { return tt.env[k] })
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil || e.Spec != tt.want || e.Source != tt.source {
				t.Fatalf("got %+v, %v; want %v from %q", e, err, tt.want, tt.source)
			}
		})
	}
}

func TestBazelProtocol(t *testing.T) {
	dir := t.TempDir()
	env := map[string]string{
		"TEST_SHARD_STATUS_FILE":      filepath.Join(dir, "status"),
		"XML_OUTPUT_FILE":             filepath.Join(dir, "test.xml"),
		"TEST_UNDECLARED_OUTPUTS_DIR": filepath.Join(dir, "out"),
		"TESTBRIDGE_TEST_ONLY":        "^open",
	}
	e, err := Detect("", 0, func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if e.XMLOutput != env["XML_OUTPUT_FILE"] || e.OutputsDir != env["TEST_UNDECLARED_OUTPUTS_DIR"] {
		t.Errorf("%+v", e)
	}
	if got := e.Filter([]string{"openai", "anthropic", "openrouter"}); !slices.Equal(got, []string{"openai", "openrouter"}) {
		t.Errorf("filter: %v", got)
	}
	if err := e.Touch(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(env["TEST_SHARD_STATUS_FILE"]); err != nil {
		t.Errorf("status file: %v", err)
	}
	e.StatusFile = filepath.Join(dir, "missing", "status")
	if err := e.Touch(); err == nil {
		t.Error("touch in a missing folder said nothing")
	}
}
