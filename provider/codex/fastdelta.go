package codex

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// The app-server sends an item/agentMessage/delta line for every piece of
// a reply (a thousand a long reply), always spelled the same way:
//
//	{"method":"item/agentMessage/delta","params":{"threadId":"..","turnId":"..","itemId":"..","delta":".."},"emittedAtMs":N}
//
// Decoding it with encoding/json took a third of openmax's CPU time on a
// streaming turn (the envelope, then the params again). deltaLine reads
// exactly that spelling, in one pass, into the event and its decoded
// params; any other spelling (other members, whitespace, a value that is
// not a string, a key twice) is left to the general path, so what it
// returns is what that path returns for the same line.

var (
	deltaPrefix = []byte(`{"method":"` + MethodItemAgentMessageDelta + `","params":`)
	emittedTail = []byte(`,"emittedAtMs":`)
)

// deltaLine decodes line when it is an agentMessage delta in the
// app-server's spelling; ok is false for any other line.
func deltaLine(line []byte) (ev Event, ok bool) {
	rest, found := bytes.CutPrefix(line, deltaPrefix)
	if !found {
		return Event{}, false
	}
	p, n, ok := deltaParams(rest)
	if !ok {
		return Event{}, false
	}
	params, tail := rest[:n], bytes.TrimRight(rest[n:], " \t\r\n")
	var at int64
	switch {
	case len(tail) == 1 && tail[0] == '}':
	case bytes.HasPrefix(tail, emittedTail) && tail[len(tail)-1] == '}':
		digits := tail[len(emittedTail) : len(tail)-1]
		if !jsonInt(digits) {
			return Event{}, false
		}
		v, err := strconv.ParseInt(string(digits), 10, 64)
		if err != nil {
			return Event{}, false
		}
		at = v
	default:
		return Event{}, false
	}
	return Event{Method: MethodItemAgentMessageDelta, Params: bytes.Clone(params), EmittedAtMs: at, delta: &p}, true
}

// deltaParams reads the params object at the start of b: string members
// threadId, turnId, itemId and delta, each at most once, no whitespace. n
// is the object's length.
func deltaParams(b []byte) (p AgentMessageDeltaNotification, n int, ok bool) {
	if len(b) < 2 || b[0] != '{' {
		return p, 0, false
	}
	i := 1
	if b[i] == '}' {
		return p, 2, true
	}
	var seen [4]bool
	for {
		key, next, escaped, ok := scanString(b, i)
		if !ok || escaped || next >= len(b) || b[next] != ':' {
			return p, 0, false
		}
		raw, end, escaped, ok := scanString(b, next+1)
		if !ok {
			return p, 0, false
		}
		v, ok := stringValue(raw, escaped)
		if !ok {
			return p, 0, false
		}
		var k int
		switch string(key) {
		case "threadId":
			k, p.ThreadID = 0, v
		case "turnId":
			k, p.TurnID = 1, v
		case "itemId":
			k, p.ItemID = 2, v
		case "delta":
			k, p.Delta = 3, v
		default:
			return p, 0, false
		}
		if seen[k] {
			return p, 0, false
		}
		seen[k] = true
		if end >= len(b) {
			return p, 0, false
		}
		switch b[end] {
		case ',':
			i = end + 1
		case '}':
			return p, end + 1, true
		default:
			return p, 0, false
		}
	}
}

// scanString finds the JSON string starting at b[i] (its opening quote):
// its content (between the quotes, as written), the index just past it,
// and whether it holds an escape. ok is false when b[i] is not a quote,
// the string does not end, or it holds a control character.
func scanString(b []byte, i int) (content []byte, next int, escaped, ok bool) {
	if i >= len(b) || b[i] != '"' {
		return nil, 0, false, false
	}
	for j := i + 1; j < len(b); j++ {
		switch c := b[j]; {
		case c == '"':
			return b[i+1 : j], j + 1, escaped, true
		case c == '\\':
			escaped = true
			j++ // the escaped byte; stringValue checks the escape
		case c < 0x20:
			return nil, 0, false, false
		}
	}
	return nil, 0, false, false
}

// stringValue is a string's value as encoding/json decodes it: content
// with no escape and valid UTF-8 as it is, anything else through
// encoding/json.
func stringValue(content []byte, escaped bool) (string, bool) {
	if !escaped && utf8.Valid(content) {
		return string(content), true
	}
	var s string
	quoted := make([]byte, 0, len(content)+2)
	quoted = append(append(append(quoted, '"'), content...), '"')
	if json.Unmarshal(quoted, &s) != nil {
		return "", false
	}
	return s, true
}

// jsonInt reports whether b is a JSON number with no fraction or exponent:
// -?(0|[1-9][0-9]*).
func jsonInt(b []byte) bool {
	b = bytes.TrimPrefix(b, []byte("-"))
	if len(b) == 0 || b[0] == '0' && len(b) > 1 {
		return false
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
