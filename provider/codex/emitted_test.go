package codex

import (
	"encoding/json"
	"testing"
)

// emittedAt reads the server's emittedAtMs where the server writes it
// without a second decode, and agrees with encoding/json everywhere.
func TestEmittedAtAgreesWithDecoding(t *testing.T) {
	for _, line := range []string{
		`{"method":"m","params":{},"emittedAtMs":1767225600000}`,
		`{"method":"m","params":{},"emittedAtMs":1767225600000}  `,
		`{"emittedAtMs":-5}`,
		`{"method":"m","params":{"emittedAtMs":1},"emittedAtMs":2}`,
		`{"method":"m","emittedAtMs":1,"params":{"emittedAtMs":2}}`,
		`{"method":"m","params":{"x":"a,\"emittedAtMs\":9}"}}`,
		`{"method":"m","params":{"x":"a\\","emittedAtMs":9}}`,
		`{"method":"m","emittedAtMs":1,"emittedAtMs":3}`,
		`{"method":"m","EmittedAtMs":4,"params":{"emittedAtMs":5}}`,
		`{"method":"m", "emittedAtMs" : 6 }`,
		`{"method":"m","emittedAtMs":null}`,
		`{"method":"m","emittedAtMs":1.5}`,
		`{"method":"m","emittedAtMs":"7"}`,
		`{"method":"m","emittedAtMs":99999999999999999999}`,
		`{"method":"m"}`,
	} {
		var m struct {
			EmittedAtMs *int64 `json:"emittedAtMs"`
		}
		werr := json.Unmarshal([]byte(line), &m)
		var want int64
		if m.EmittedAtMs != nil {
			want = *m.EmittedAtMs
		}
		got, err := emittedAt([]byte(line))
		if (err != nil) != (werr != nil) || err == nil && got != want {
			t.Errorf("emittedAt(%s) = %d, %v; encoding/json reads %d, %v", line, got, err, want, werr)
		}
	}
}
