package main

import (
	"strings"
	"testing"
)

// TestHelpEverywhere: every command answers -h/--help with its synopsis, a
// purpose and its flags on stdout, exit 0; `openmax help CMD` says the same.
func TestHelpEverywhere(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string // the start of stdout
	}{
		{[]string{"--help"}, "openmax is an agent harness"},
		{[]string{"-h"}, "openmax is an agent harness"},
		{[]string{"help"}, "openmax is an agent harness"},
		{[]string{"replay", "--help"}, "usage: openmax replay "},
		{[]string{"record", "--help"}, "usage: openmax record "},
		{[]string{"record", "--cassette", "x.yaml", "-h"}, "usage: openmax record "},
		{[]string{"fake-provider", "--help"}, "usage: openmax fake-provider "},
		{[]string{"trust", "--help"}, "usage: openmax trust "},
		{[]string{"view", "--help"}, "usage: openmax view "},
		{[]string{"cassette", "--help"}, "usage:\n  openmax cassette show"},
		{[]string{"cassette", "show", "--help"}, "usage: openmax cassette show "},
		{[]string{"cassette", "inject", "-h"}, "usage: openmax cassette inject "},
		{[]string{"cassette", "import", "--help"}, "usage: openmax cassette import "},
		{[]string{"cassette", "sweep", "--help"}, "usage: openmax cassette sweep "},
		{[]string{"help", "replay"}, "usage: openmax replay "},
		{[]string{"help", "cassette"}, "usage:\n  openmax cassette show"},
	} {
		stdout, stderr, code := runCLI(t, "", tt.args...)
		if code != 0 || stderr != "" || !strings.HasPrefix(stdout, tt.want) {
			t.Errorf("%v: exit %d, stderr %q, stdout %.120q (want it to start %q)", tt.args, code, stderr, stdout, tt.want)
		}
		if strings.HasPrefix(tt.want, "usage: openmax") && !strings.Contains(stdout, "\n\n") {
			t.Errorf("%v: no purpose line:\n%s", tt.args, stdout)
		}
	}
	if stdout, _, code := runCLI(t, "", "version"); code != 0 || stdout != "openmax "+Version+"\n" {
		t.Errorf("version: exit %d, %q", code, stdout)
	}
}

// TestUsageErrorsExit2: a mistake on any command's line exits 2 with the
// problem on stderr and nothing on stdout.
func TestUsageErrorsExit2(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"replay"}, "want one cassette"},
		{[]string{"replay", "a", "b"}, "want one cassette"},
		{[]string{"replay", "--bogus", "x"}, "flag provided but not defined: -bogus"},
		{[]string{"replay", "x", "--pace", "fast"}, "bad pace"},
		{[]string{"fake-provider", "--bogus"}, "flag provided but not defined"},
		{[]string{"fake-provider", "--scenario", "a", "extra"}, `unexpected argument "extra"`},
		{[]string{"trust", "a", "b"}, "at most one directory"},
		{[]string{"view", "a", "b"}, "at most one transcript"},
		{[]string{"cassette"}, "openmax cassette show"},
		{[]string{"cassette", "shwo", "x"}, `did you mean "show"?`},
		{[]string{"cassette", "show"}, "wrong arguments"},
		{[]string{"cassette", "sweep"}, "want one cassette"},
		{[]string{"help", "nope"}, `no command "nope"`},
		{[]string{"recrod"}, `did you mean "record"?`},
	} {
		stdout, stderr, code := runCLI(t, "", tt.args...)
		if code != 2 || stdout != "" || !strings.Contains(stderr, tt.want) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q (want it to contain %q)", tt.args, code, stdout, stderr, tt.want)
		}
	}
}
