package main

import (
	"slices"
	"testing"
)

// TestAsksAgentMarker: the walk up the process tree starts at once for
// every command that can consult the agent marker (the live harness, trust,
// --approve; and anything not known to be safe, such as a new command),
// and is skipped at start only for the commands that never do.
func TestAsksAgentMarker(t *testing.T) {
	tests := []struct {
		args []string
		want bool
	}{
		{nil, true},
		{[]string{"--stdio"}, true},
		{[]string{"--stdio", "--provider", "openai"}, true},
		{[]string{"-p", "hi"}, true},
		{[]string{"-p", "--check"}, true}, // a prompt, not the flag
		{[]string{"--approve", "--id", "x"}, true},
		{[]string{"record", "--cassette", "c.yaml"}, true},
		{[]string{"record", "--cassette", "c.yaml", "--proxy", "--upstream", "http://x"}, false}, // no harness
		{[]string{"trust"}, true},
		{[]string{"no-such-command"}, true},
		{[]string{"--version"}, false},
		{[]string{"version"}, false},
		{[]string{"help"}, false},
		{[]string{"--check", "--stdio"}, false},
		{[]string{"--spec", "stdio"}, false},
		{[]string{"replay", "c.yaml"}, false},
		{[]string{"view", "t.jsonl"}, false},
		{[]string{"cassette", "scan", "."}, false},
		{[]string{"report", "cassettes"}, false},
		{[]string{"fake-provider", "--scenario", "s.yaml"}, false},
		{[]string{"fake-app-server"}, false},
	}
	for _, tt := range tests {
		if got := asksAgentMarker(tt.args); got != tt.want {
			t.Errorf("asksAgentMarker(%q) = %v, want %v", tt.args, got, tt.want)
		}
	}
	// Every subcommand is classified here: a new one must be added above
	// (and is eager until it is).
	for _, c := range subcommands {
		if !slices.ContainsFunc(tests, func(tt struct {
			args []string
			want bool
		}) bool {
			return len(tt.args) > 0 && tt.args[0] == c
		}) {
			t.Errorf("subcommand %q is not in this test's table", c)
		}
	}
}
