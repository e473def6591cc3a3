package main

import (
	"bytes"
	"testing"
)

// Hook programs in session cases: a project file may name the test hook
// program (testdata/hookprog, built once per test binary run) as
// {{HOOKPROG}} and a fresh scratch folder of the case as {{STATE}} (for a
// hook that counts its calls across processes). Both are written back as
// $HOOKPROG and $STATE in the transcript.

// hookProgram builds testdata/hookprog once and returns its path.
func hookProgram(t *testing.T) string {
	t.Helper()
	return testdataProgram(t, "hookprog")
}

// caseHooks expands and normalises the hook placeholders of one case.
type caseHooks struct {
	prog, state string // "" until a project file asked for them
}

var (
	hookProgMark = []byte("{{HOOKPROG}}")
	stateMark    = []byte("{{STATE}}")
)

// expand replaces the placeholders in a project file's content.
func (h *caseHooks) expand(t *testing.T, data []byte) []byte {
	t.Helper()
	if bytes.Contains(data, hookProgMark) {
		if h.prog == "" {
			h.prog = hookProgram(t)
		}
		data = bytes.ReplaceAll(data, hookProgMark, []byte(h.prog))
	}
	if bytes.Contains(data, stateMark) {
		if h.state == "" {
			h.state = t.TempDir()
		}
		data = bytes.ReplaceAll(data, stateMark, []byte(h.state))
	}
	return data
}

// normalise writes the expanded paths back as $HOOKPROG and $STATE.
func (h *caseHooks) normalise(out []byte) []byte {
	if h.prog != "" {
		out = bytes.ReplaceAll(out, []byte(h.prog), []byte("$HOOKPROG"))
	}
	if h.state != "" {
		out = bytes.ReplaceAll(out, []byte(h.state), []byte("$STATE"))
	}
	return out
}
