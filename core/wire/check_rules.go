package wire

import (
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

// Rule is one requirement the checker enforces, with the sentence of
// stdio-protocol.md (or, for a strict rule, the openmax habit) it comes
// from. The corpus in cmd/openmax/testdata/checker has a legal and an
// illegal stream for every spec rule, each naming its rule ID.
type Rule struct {
	ID       string
	Sentence string
}

// SpecRules are the rules of the default mode: exactly stdio-protocol.md.
var SpecRules = []Rule{
	{"hello-first", "The first stdout line is: {\"type\":\"hello\",...}"},
	{"transcript-next", "continued is true when --continue resumed a prior session; the next line is then one transcript object"},
	{"transcript-caps", "messages carries user and assistant text only ..., each message capped at 4096 characters and the whole line at 256 KiB of content"},
	{"line-fields", "This file is the normative reference for every field of every line. (each type's Fields column: present, of its JSON type, enums from the listed values)"},
	{"session-id", "Every event line carries the flattened session_id ... Only two lines carry no session_id: protocol_error and the approval_mode acknowledgement (hello and transcript ... carry one)"},
	{"run-one-message-done", "On a normal turn a run of token deltas is terminated by one message_done"},
	{"error-before-done", "error: The turn failed; an error line precedes it / truncated: ... an error line precedes it"},
	{"truncated-message-done", "A stream that ends mid-answer with no completion signal still emits message_done (with the partial text ...), then an error line, then done with stop_reason truncated"},
	{"refused-after-protocol-error", "Empty text, or a project that is not trusted, yields {\"type\":\"protocol_error\",...} followed by done with stop_reason refused"},
	{"in-flight-no-done", "The one case with no done is a user sent while a turn is already in flight: it is refused with a protocol_error alone"},
	{"retry-no-token", "no token line precedes a retried stream"},
	{"retry-attempt", "attempt is the one that goes out of the max_attempts budget (a resend: the second attempt or later)"},
	{"harness-note-call-id", "call_id links it to the tool result it rode; it is empty for a note inserted before the next prompt"},
	{"schemas-once", "Advisory, at most once per session"},
	{"compacted-zero", "compacted_messages of 0 means the transcript was already at or under the prune target and nothing changed"},
	{"gate-no-source", "Both fields are empty strings when reason is gate."},
	{"unapproved-source", "Such a request carries source_path (project-relative where possible) and source_sha (first 12 hex chars of the file's sha256)"},
	{"env-omitted-empty", "It is omitted from the wire when empty, so a gate request and a tool that forwards nothing carry no env key."},
	{"turn-refused-after-message-done", "turn_refused means the turn continues after a message_done without a user command from the client."},
	{"turn-refused-continuation", "continuation and continuations_left are the numbers the hook's payload carried for this attempt: refusals honored before this one ... more times than the harness honors (8)"},
	{"refrozen-not-in-flight", "reload ... answered by refrozen, or protocol_error while a turn is in flight"},
	{"done-terminates", "Every user command is answered by exactly one done, and done is the only guaranteed terminator"},
	{"input-one-done-per-user", "Every user command is answered by exactly one done ... The one case with no done is a user sent while a turn is already in flight (with --input)"},
}

// StrictRules are openmax's own habits, checked only with Strict.
var StrictRules = []Rule{
	{"budget-opens-turn", "openmax opens every admitted turn with exactly one budget line (so a duplicated or dropped done shows)"},
	{"no-unknown-members", "openmax emits no member a line's type does not define"},
	{"harness-note-in-turn", "openmax emits harness_note only inside a turn"},
	{"error-then-done", "openmax's error line is directly followed by done, and a turn with an error line ends error or truncated"},
	{"run-always-closed", "openmax closes every token run with message_done or error, whatever the stop_reason"},
	{"message-done-text", "message_done repeats the text of the token run it closes"},
	{"one-reply-per-round", "a new reply after message_done needs a tool call or turn_refused between"},
	{"tool-bookkeeping", "tool_start after the reply completed, with a fresh call_id, each ended by one tool_end; diff names a running call"},
	{"approval-bookkeeping", "approval ids are unique, settled once, none pending at done"},
	{"blocked-not-asked", "done blocked comes before anything of a model reply"},
	{"protocol-error-line", "with --input, each protocol_error names the stdin line it answers (\"line N: \"), and nothing answering a line after quit follows the final done"},
}

// values checks what the spec says about a line's values beyond their
// types: the rules that need no context from earlier lines.
func (c *Checker) values(typ string, m object) error {
	switch typ {
	case "approval_request":
		path, sha := m.str("source_path"), m.str("source_sha")
		switch m.str("reason") {
		case "gate":
			if path != "" || sha != "" {
				return fmt.Errorf("source_path and source_sha must be empty strings when reason is gate")
			}
		case "unapproved_source":
			if path == "" {
				return fmt.Errorf("reason unapproved_source needs a source_path")
			}
			if !hex12(sha) {
				return fmt.Errorf("source_sha %s is not the first 12 hex chars of a sha256", quoteShort(sha))
			}
		}
		if raw, ok := m.get("env"); ok && string(raw) == "[]" {
			return fmt.Errorf("env must be omitted when empty")
		}
	case "compacted":
		if m.num("compacted_messages") == 0 && m.num("tokens_before") != m.num("tokens_after") {
			return fmt.Errorf("compacted_messages 0 means nothing changed, but tokens went from %d to %d", m.num("tokens_before"), m.num("tokens_after"))
		}
	case "transcript":
		raw, _ := m.get("messages")
		var msgs []TranscriptMessage
		if err := json.Unmarshal(raw, &msgs); err != nil {
			return fmt.Errorf("messages: %w", err)
		}
		total := 0
		for i, msg := range msgs {
			if n := utf8.RuneCountInString(msg.Content); n > maxTranscriptMessage {
				return fmt.Errorf("message %d has %d characters, over the cap of %d", i, n, maxTranscriptMessage)
			}
			total += len(msg.Content)
		}
		if total > maxTranscriptContent {
			return fmt.Errorf("%d bytes of content, over the line's cap of 256 KiB", total)
		}
	}
	return nil
}

const (
	maxTranscriptMessage = 4096      // characters of one transcript message
	maxTranscriptContent = 256 << 10 // bytes of content in one transcript line
)

func hex12(s string) bool {
	if len(s) != 12 {
		return false
	}
	for _, r := range s {
		if !('0' <= r && r <= '9' || 'a' <= r && r <= 'f' || 'A' <= r && r <= 'F') {
			return false
		}
	}
	return true
}
