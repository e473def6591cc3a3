package scan

import (
	"encoding/base64"
	"testing"
)

// TestRulesOnValues: what each rule takes for a secret and what it
// leaves, value by value.
func TestRulesOnValues(t *testing.T) {
	b64 := base64.RawURLEncoding.EncodeToString
	for _, tt := range []struct {
		text string
		want string // the rule found, "" for none
	}{
		{"sk-proj-" + "Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z", RuleOpenAI},
		{"sk-learn is a library", ""},
		{"task-force-alpha-bravo-charlie-delta", ""},
		{"sk-ant-api03-" + "Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z", RuleAnthropic},
		{"AIza" + "Sy3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAb0", RuleGoogle},
		{"AIza" + "Sy3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAb0toolong", ""},
		{"AKIA" + "Z3DF6HIJ9KLM2NOP", RuleAWSKeyID},
		{"NOTAKIA" + "Z3DF6HIJ9KLM2NOP", ""},
		{b64([]byte(`{"alg":"HS256"}`)) + "." + b64([]byte(`{"sub":"x"}`)) + ".c2ln", RuleJWT},
		{b64([]byte(`{"contentBlockIndex":0}`)) + "." + b64([]byte(`{"sub":"x"}`)) + ".c2ln", ""},
		{"-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjE", RulePrivateKey},
		{"-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0B", ""},
		{"curl -H 'Authorization: Bearer " + "Ab3dEf6hIj9kLm2nOp5q'", RuleBearer},
		{"Authorization: Bearer $OPENAI_API_KEY", ""},
		{"ghp_" + "Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAb0c", RuleGitHub},
	} {
		got := ""
		if ms := textMatches(tt.text); len(ms) > 0 {
			got = ms[0].rule
		}
		if got != tt.want {
			t.Errorf("%.40q: rule %q, want %q", tt.text, got, tt.want)
		}
	}
	for _, tt := range []struct {
		v    string
		want bool
	}{
		{"Xq7Lm2Vb9Rt4Zp1Kc8Wd3Nf6", true},
		{"9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", true},
		{"abcdefghijklmnopqrstuvwxyzABCDEFGH", false},   // padding
		{"123e4567-e89b-12d3-a456-426614174000", false}, // a UUID
		{"gpt-4o-mini-2024-07-18", false},
		{"ContentBlockDeltaEvent42", false},
		{"/home/user/project/src/main.go", false},
		{"b5ba3ca7c1e433ba", false}, // short hex
		{"X-Amz-Security-Token", false},
	} {
		if got := highEntropy(tt.v); got != tt.want {
			t.Errorf("highEntropy(%q) = %v (entropy %.2f, bar %.2f)", tt.v, got, entropy(tt.v), entropyBar(len(tt.v), false))
		}
	}
	for name, want := range map[string]bool{
		"x-request-id": true, "x-amz-id-2": true, "toolUseId": true, "item_ids": true, "openai-project": true,
		"system_fingerprint": true, "x-custom-thing": false, "state": false, "note": false,
	} {
		if got := idName(name); got != want {
			t.Errorf("idName(%q) = %v", name, got)
		}
	}
	for _, tt := range []struct {
		v    string
		want bool
	}{
		{"[scrubbed]", true}, {"Bearer [scrubbed]", true}, {"<REDACTED>", true}, {"DUMMY", true}, {"", true},
		{"****", true}, {"xxxxxxxxxxxx", true}, {"$OPENAI_API_KEY", true}, {"${TOKEN}", true}, {"{{ .Key }}", true},
		{"fake-api-key-for-testing-only", false}, {"Ab3dEf6hIj9kLm2n", false},
	} {
		if got := placeholder(tt.v); got != tt.want {
			t.Errorf("placeholder(%q) = %v", tt.v, got)
		}
	}
}
