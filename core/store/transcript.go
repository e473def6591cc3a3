package store

import (
	"github.com/openmax/openmax/core/wire"
	"github.com/openmax/openmax/provider"
)

// Caps of the transcript line a continued session sends after hello.
const (
	// MaxTranscriptMessageRunes caps each message's content, in characters.
	MaxTranscriptMessageRunes = 4096
	// MaxTranscriptBytes caps the content of all messages together, in
	// bytes (UTF-8).
	MaxTranscriptBytes = 256 << 10
)

// Transcript renders a session's history for the wire's transcript line:
// user and assistant text only, in order. Tool results, the tool calls and
// reasoning of assistant messages, and messages with no text are left out.
// Each message keeps its first MaxTranscriptMessageRunes characters; when the
// whole exceeds MaxTranscriptBytes the oldest messages are dropped, keeping
// the most recent history. truncated reports whether anything was cut (tool
// traffic being left out is not a cut). messages is never nil, so it encodes
// as [].
func Transcript(msgs []provider.Message) (messages []wire.TranscriptMessage, truncated bool) {
	var kept []wire.TranscriptMessage
	for _, m := range msgs {
		if m.Role != provider.RoleUser && m.Role != provider.RoleAssistant || m.Text == "" {
			continue
		}
		text, cut := capRunes(m.Text, MaxTranscriptMessageRunes)
		truncated = truncated || cut
		kept = append(kept, wire.TranscriptMessage{Role: string(m.Role), Content: text})
	}
	// Keep the longest suffix that fits the total.
	first, total := len(kept), 0
	for first > 0 && total+len(kept[first-1].Content) <= MaxTranscriptBytes {
		first--
		total += len(kept[first].Content)
	}
	if first > 0 {
		truncated = true
	}
	messages = make([]wire.TranscriptMessage, 0, len(kept)-first)
	return append(messages, kept[first:]...), truncated
}

// capRunes returns s's first n runes (an invalid byte counting as one) and
// whether anything was cut.
func capRunes(s string, n int) (string, bool) {
	if len(s) <= n {
		return s, false // n bytes hold at most n runes
	}
	count := 0
	for i := range s {
		if count == n {
			return s[:i], true
		}
		count++
	}
	return s, false
}
