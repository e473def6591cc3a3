package wire

import (
	"fmt"
	"strings"
	"testing"
)

// A blocked turn is one whose prompt a hook refused: nothing went to the
// model, so no line of a reply may precede its done.
func TestCheckerBlockedTurnHasNoReply(t *testing.T) {
	const hello = `{"type":"hello","proto":"openmax-stdio/6","protocol_version":6,"session_id":"s","version":"0","project":"/p","continued":false}`
	for _, tc := range []struct {
		name  string
		lines []string
		want  string // "" to accept
	}{
		{"note only", []string{`{"session_id":"s","type":"budget","used_tokens":1,"context_tokens":2}`,
			`{"session_id":"s","type":"harness_note","call_id":"","text":"blocked"}`,
			`{"session_id":"s","type":"done","stop_reason":"blocked"}`}, ""},
		{"hook_failed before", []string{`{"session_id":"s","type":"hook_failed","hook":"h","event":"user_prompt_submit","detail":"x"}`,
			`{"session_id":"s","type":"budget","used_tokens":1,"context_tokens":2}`,
			`{"session_id":"s","type":"done","stop_reason":"blocked"}`}, ""},
		{"a reply", []string{`{"session_id":"s","type":"budget","used_tokens":1,"context_tokens":2}`,
			`{"session_id":"s","type":"token","text":"hi"}`, `{"session_id":"s","type":"message_done","text":"hi"}`,
			`{"session_id":"s","type":"done","stop_reason":"blocked"}`}, "done blocked after the model was asked"},
		{"a retry", []string{`{"session_id":"s","type":"budget","used_tokens":1,"context_tokens":2}`,
			`{"session_id":"s","type":"retry","attempt":2,"max_attempts":3,"reason":"x"}`,
			`{"session_id":"s","type":"done","stop_reason":"blocked"}`}, "done blocked after the model was asked"},
		{"a previous turn's reply", []string{`{"session_id":"s","type":"budget","used_tokens":1,"context_tokens":2}`,
			`{"session_id":"s","type":"token","text":"hi"}`, `{"session_id":"s","type":"message_done","text":"hi"}`,
			`{"session_id":"s","type":"done","stop_reason":"stop"}`,
			`{"session_id":"s","type":"budget","used_tokens":1,"context_tokens":2}`,
			`{"session_id":"s","type":"done","stop_reason":"blocked"}`}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := NewChecker(Strict())
			var got error
			for _, l := range append([]string{hello}, tc.lines...) {
				if err := c.Line([]byte(l)); err != nil && got == nil {
					got = err
				}
			}
			switch {
			case tc.want == "" && got != nil:
				t.Errorf("rejected: %v", got)
			case tc.want != "" && (got == nil || !strings.Contains(got.Error(), tc.want)):
				t.Errorf("got %v, want an error containing %q", got, tc.want)
			}
		})
	}
}

// turn_refused's continuation counts the refusals honored before it in the
// turn, and a turn honors at most 8.
func TestCheckerTurnRefusedNumbers(t *testing.T) {
	const hello = `{"type":"hello","proto":"openmax-stdio/6","protocol_version":6,"session_id":"s","version":"0","project":"/p","continued":false}`
	reply := []string{`{"session_id":"s","type":"token","text":"a"}`, `{"session_id":"s","type":"message_done","text":"a"}`}
	refused := func(n, left int) string {
		return fmt.Sprintf(`{"session_id":"s","type":"turn_refused","hook":"h","reason":"r","continuation":%d,"continuations_left":%d}`, n, left)
	}
	turn := func(nums ...[2]int) []string {
		out := []string{`{"session_id":"s","type":"budget","used_tokens":1,"context_tokens":2}`}
		out = append(out, reply...)
		for _, n := range nums {
			out = append(out, refused(n[0], n[1]))
			out = append(out, reply...)
		}
		return append(out, `{"session_id":"s","type":"done","stop_reason":"stop"}`)
	}
	eight := [][2]int{{0, 8}, {1, 7}, {2, 6}, {3, 5}, {4, 4}, {5, 3}, {6, 2}, {7, 1}}
	for _, tc := range []struct {
		name  string
		lines []string
		want  string
	}{
		{"two", turn([2]int{0, 8}, [2]int{1, 7}), ""},
		{"eight", turn(eight...), ""},
		{"two turns count apart", append(turn([2]int{0, 8}), turn([2]int{0, 8})...), ""},
		{"a ninth", turn(append(eight, [2]int{8, 0})...), "turn_refused continuation 8"},
		{"skipped", turn([2]int{0, 8}, [2]int{2, 6}), "turn_refused continuation 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := NewChecker(Strict())
			var got error
			for _, l := range append([]string{hello}, tc.lines...) {
				if err := c.Line([]byte(l)); err != nil && got == nil {
					got = err
				}
			}
			switch {
			case tc.want == "" && got != nil:
				t.Errorf("rejected: %v", got)
			case tc.want != "" && (got == nil || !strings.Contains(got.Error(), tc.want)):
				t.Errorf("got %v, want an error containing %q", got, tc.want)
			}
		})
	}
}
