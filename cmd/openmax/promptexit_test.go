package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPromptExitFour: -p exits 4 when the turn ends budget_exhausted (the
// stdio wire exits 0 on it: the client reads done), with the stop reason
// on stderr and the text streamed before the cap on stdout. The unverified
// row needs a blocking turn_end hook; it lives with the hook tests.
func TestPromptExitFour(t *testing.T) {
	tests := []struct {
		name   string
		yaml   string
		extra  []string
		stdout string
		stderr string
		code   int
	}{
		{"budget_exhausted after a tool round",
			"replies:\n  - {text: 'working ', tool_calls: [{id: c1, name: none}], usage: {prompt_tokens: 50, completion_tokens: 5}}\n  - text: never sent\n",
			[]string{"--max-agent-tokens", "40"}, "working \n", "the turn ended budget_exhausted", 4},
		{"under the cap the same scenario ends normally",
			"replies:\n  - {text: 'working ', tool_calls: [{id: c1, name: none}], usage: {prompt_tokens: 50, completion_tokens: 5}}\n  - text: done\n",
			[]string{"--max-agent-tokens", "100000"}, "working \ndone\n", "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sc := filepath.Join(t.TempDir(), "s.yaml")
			if err := os.WriteFile(sc, []byte(tt.yaml), 0o644); err != nil {
				t.Fatal(err)
			}
			args := append([]string{"-p", "go", "--provider", "script", "--script", sc}, tt.extra...)
			stdout, stderr, code := runCLI(t, "", args...)
			if stdout != tt.stdout || code != tt.code || !strings.Contains(stderr, tt.stderr) {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit %d, stdout %q, stderr with %q", code, stdout, stderr, tt.code, tt.stdout, tt.stderr)
			}
		})
	}
}
