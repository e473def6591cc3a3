package core

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestDenyRules(t *testing.T) {
	rules, err := ParseDenyRules([]byte(`{"deny": [
		{"tool": "run_command", "args_match": "\"argv\":\\[\"rm\"", "reason": "no rm"},
		{"tool": "*", "args_match": "secret"},
		{"tool": "write_file"}
	]}`), "policy.json")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, tool, args, want string
	}{
		{"rm", "run_command", `{"argv": ["rm", "-rf", "/"]}`, `policy.json rule 1 (tool run_command, args matching "\"argv\":\\[\"rm\""): no rm`},
		{"escaped rm reads as rm", "run_command", `{"argv":["\u0072m","x"]}`, "policy.json rule 1"},
		{"keys sorted", "run_command", `{"cwd": ".", "argv": ["rm"]}`, "policy.json rule 1"},
		{"other command", "run_command", `{"argv": ["ls"]}`, ""},
		{"any tool", "read_file", `{"path": "secret.txt"}`, "policy.json rule 2 (tool *, args matching \"secret\")"},
		{"whole tool", "write_file", `{"path": "a"}`, "policy.json rule 3 (tool write_file)"},
		{"no rule", "read_file", `{"path": "a"}`, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := rules.Deny(c.tool, json.RawMessage(c.args))
			if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
				t.Errorf("Deny = %q, want %q", got, c.want)
			}
		})
	}
}

func TestParseDenyRulesRefusesMistakes(t *testing.T) {
	cases := []struct{ policy, want string }{
		{`{"deny": [{"tool": "x", "args": "y"}]}`, `unknown field "args"`},
		{`{"deny": [{"args_match": "y"}]}`, `rule 1 has no "tool"`},
		{`{"deny": [{"tool": "x", "args_match": "("}]}`, "rule 1: args_match"},
		{`{"deny": {}}`, "cannot unmarshal"},
	}
	for _, c := range cases {
		if _, err := ParseDenyRules([]byte(c.policy), "p.json"); err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "p.json") {
			t.Errorf("%s: %v, want an error naming p.json saying %q", c.policy, err, c.want)
		}
	}
}
