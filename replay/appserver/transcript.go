package appserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/openmax/openmax/internal/lines"
)

// DefaultMaxLine caps one line from the client when Options give no other
// cap: far above any message of the protocol, the same cap the codex
// client puts on the app-server's lines. A transcript line, which wraps a
// line of up to that size (escaped when it was not JSON), may have up to
// DefaultMaxTranscriptLine bytes.
const (
	DefaultMaxLine           = 64 << 20
	DefaultMaxTranscriptLine = 2 * DefaultMaxLine
)

// The transcript's vocabulary, as provider/codex records it
// (codex.DirSend, codex.DirRecv, codex.Redacted; a test checks they agree).
// It is spelled out here rather than imported so that provider/codex's own
// tests can serve transcripts with this package without an import cycle.
const (
	dirSend  = "send" // a line the client wrote
	dirRecv  = "recv" // a line the client read
	redacted = "[redacted]"
)

// kind is what a message is, by its top-level members.
type kind uint8

const (
	kindOther        kind = iota // a JSON value that is not a JSON-RPC message
	kindRequest                  // "method" and "id"
	kindNotification             // "method", no "id"
	kindResponse                 // "id", no "method"
	kindRaw                      // a line that was not JSON (recorded as a JSON string)
)

// Line is one line of a transcript.
type Line struct {
	Num int             // the 1-based line number in the transcript
	Dir string          // "send" (client → app-server) or "recv"
	Msg json.RawMessage // the message as compact JSON; a JSON string for a line that was not JSON

	kind   kind
	id     string // the compact top-level "id", "" when absent
	method string
}

// Transcript is a parsed transcript. It is not changed by Serve, so one
// transcript may be served any number of times, concurrently.
type Transcript struct {
	Lines []Line
}

// ParseError is a transcript line that could not be used.
type ParseError struct {
	Line int // 1-based
	Err  error
}

func (e *ParseError) Error() string { return fmt.Sprintf("transcript line %d: %v", e.Line, e.Err) }
func (e *ParseError) Unwrap() error { return e.Err }

// ParseFile reads the transcript at path (see Parse).
func ParseFile(path string, maxLine int) (*Transcript, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("transcript: %w", err)
	}
	defer f.Close()
	t, err := Parse(f, maxLine)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

// Parse reads a transcript: one {"dir":"send"|"recv","msg":...} object a
// line, as provider/codex records them; blank lines are skipped. A line
// longer than maxLine bytes (0 means DefaultMaxTranscriptLine), one that is not such
// an object, or one with another member is a *ParseError naming its line.
func Parse(r io.Reader, maxLine int) (*Transcript, error) {
	if maxLine <= 0 {
		maxLine = DefaultMaxTranscriptLine
	}
	lr := lines.NewReader(r, maxLine)
	t := &Transcript{}
	for n := 1; ; n++ {
		b, err := lr.Next()
		if errors.Is(err, io.EOF) {
			return t, nil
		}
		if err != nil {
			return nil, &ParseError{Line: n, Err: err}
		}
		if len(bytes.TrimSpace(b)) == 0 {
			continue
		}
		l, err := parseLine(b)
		if err != nil {
			return nil, &ParseError{Line: n, Err: err}
		}
		l.Num = n
		t.Lines = append(t.Lines, l)
	}
}

// parseLine decodes one transcript line.
func parseLine(b []byte) (Line, error) {
	var buf bytes.Buffer
	buf.Grow(len(b))
	if err := json.Compact(&buf, b); err != nil {
		return Line{}, lineError(b)
	}
	c := buf.Bytes()
	if c[0] != '{' {
		return Line{}, lineError(b)
	}
	var dir, msg []byte
	err := members(c, func(key, val []byte) error {
		switch string(key) {
		case `"dir"`:
			if dir != nil {
				return errors.New(`two "dir" members`)
			}
			dir = val
		case `"msg"`:
			if msg != nil {
				return errors.New(`two "msg" members`)
			}
			msg = val
		default:
			return fmt.Errorf("not a {\"dir\",\"msg\"} object: unknown field %s", key)
		}
		return nil
	})
	if err != nil {
		return Line{}, err
	}
	var d string
	if dir != nil {
		if err := json.Unmarshal(dir, &d); err != nil {
			return Line{}, fmt.Errorf("dir is %s, not a string", dir)
		}
	}
	if d != dirSend && d != dirRecv {
		return Line{}, fmt.Errorf("dir is %q, neither %q nor %q", d, dirSend, dirRecv)
	}
	if msg == nil {
		return Line{}, errors.New("no msg")
	}
	l := Line{Dir: d, Msg: msg}
	if err := l.classify(); err != nil {
		return Line{}, err
	}
	return l, nil
}

// lineError says why b, which json.Compact refused or which is not an
// object, is not a transcript line.
func lineError(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	var v any
	if err := dec.Decode(&v); err != nil {
		return fmt.Errorf("not a {\"dir\",\"msg\"} object: %w", err)
	}
	if _, ok := v.(map[string]any); !ok {
		return fmt.Errorf("not a {\"dir\",\"msg\"} object: %.40s", bytes.TrimSpace(b))
	}
	return errors.New("more than one JSON value on the line")
}

// members calls fn with the raw key and value of each top-level member
// of the compact JSON object obj, in order, until fn fails.
func members(obj []byte, fn func(key, val []byte) error) error {
	for i := 1; i < len(obj) && obj[i] != '}'; {
		if obj[i] == ',' {
			i++
		}
		kEnd := stringEnd(obj, i)
		vEnd := valueEnd(obj, kEnd+1) // past the ':'
		if err := fn(obj[i:kEnd], obj[kEnd+1:vEnd]); err != nil {
			return err
		}
		i = vEnd
	}
	return nil
}

// classify fills in the line's kind, id and method.
func (l *Line) classify() error {
	switch l.Msg[0] {
	case '"':
		l.kind = kindRaw
		return nil
	case '{':
	default:
		l.kind = kindOther
		return nil
	}
	idRaw, methodRaw := topMembers(l.Msg)
	id, err := canonicalID(idRaw)
	if err != nil {
		return fmt.Errorf("msg: id: %w", err)
	}
	var method string
	if methodRaw != nil {
		if err := json.Unmarshal(methodRaw, &method); err != nil {
			return fmt.Errorf("msg: method is not a string: %s", methodRaw)
		}
	}
	l.kind, l.id, l.method = kindOf(idRaw != nil, methodRaw != nil), id, method
	return nil
}

// kindOf is the kind of a JSON object by the members it has.
func kindOf(hasID, hasMethod bool) kind {
	switch {
	case hasMethod && hasID:
		return kindRequest
	case hasMethod:
		return kindNotification
	case hasID:
		return kindResponse
	}
	return kindOther
}

// canonicalID is an id's value as Go encodes it, so that two spellings of
// one id (escapes, white space) compare equal; "" for none.
func canonicalID(raw []byte) (string, error) {
	if raw == nil {
		return "", nil
	}
	if simpleID(raw) {
		return string(raw), nil
	}
	v, err := decode(raw)
	if err != nil {
		return "", err
	}
	return canonical(v), nil
}

// simpleID reports whether raw is already canonical: digits, or a string
// of plain printable ASCII.
func simpleID(raw []byte) bool {
	if len(raw) == 0 {
		return false
	}
	if raw[0] == '"' {
		if len(raw) < 2 || raw[len(raw)-1] != '"' {
			return false
		}
		for _, c := range raw[1 : len(raw)-1] {
			if c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
				return false
			}
		}
		return true
	}
	for i, c := range raw {
		if (c < '0' || c > '9') && !(i == 0 && c == '-' && len(raw) > 1) {
			return false
		}
	}
	return true
}

// canonical encodes a decoded id.
func canonical(v any) string {
	if s, ok := v.(string); ok {
		return string(quote(s))
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// topMembers returns the raw values of the top-level "id" and "method"
// members of the compact JSON object obj (nil when absent).
func topMembers(obj []byte) (id, method []byte) {
	_ = members(obj, func(key, val []byte) error {
		switch string(key) {
		case `"id"`:
			id = val
		case `"method"`:
			method = val
		}
		return nil
	})
	return id, method
}

// valueEnd returns the index just past the compact JSON value at i.
func valueEnd(b []byte, i int) int {
	if i >= len(b) {
		return i
	}
	switch b[i] {
	case '"':
		return stringEnd(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); {
			switch b[j] {
			case '"':
				j = stringEnd(b, j)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
			j++
		}
		return len(b)
	}
	j := i
	for j < len(b) && b[j] != ',' && b[j] != '}' && b[j] != ']' {
		j++
	}
	return j
}

// raw is the text of a line recorded as not JSON.
func (l *Line) raw() string {
	var s string
	if err := json.Unmarshal(l.Msg, &s); err != nil {
		return string(l.Msg)
	}
	return s
}

// String names the line for people: its number, direction and message.
func (l *Line) String() string {
	return fmt.Sprintf("line %d (%s %s)", l.Num, l.Dir, describe(l.kind, l.id, l.method))
}

// describe names a message by its kind, id and method.
func describe(k kind, id, method string) string {
	switch k {
	case kindRequest:
		return fmt.Sprintf("request %s id %s", method, id)
	case kindNotification:
		return "notification " + method
	case kindResponse:
		return "response to id " + id
	case kindRaw:
		return "a line that is not JSON"
	}
	return "a JSON value that is not a JSON-RPC message"
}

// summary lists lines for an error message, at most max of them.
func summary(ls []*Line, max int) string {
	var b strings.Builder
	for i, l := range ls {
		if i == max {
			fmt.Fprintf(&b, "\n  ... and %d more", len(ls)-max)
			break
		}
		b.WriteString("\n  ")
		b.WriteString(l.String())
	}
	return b.String()
}
