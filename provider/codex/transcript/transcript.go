// Package transcript is the one definition of a codex app-server
// transcript: every line that crossed the app-server's stdio, in the order
// its client saw it, one {"dir":"send"|"recv","msg":...} object a line.
// provider/codex writes it (Options.Transcript, through Encode) and
// replay/appserver plays it back (through Reader); both import it from
// here, and it imports neither. Its functions keep no state and are safe
// for concurrent use; a Reader is for one goroutine at a time.
package transcript

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"sync"

	"github.com/openmax/openmax/internal/lines"
)

// Directions of a transcript line, seen from the client.
const (
	DirSend = "send" // a line the client wrote to the app-server's stdin
	DirRecv = "recv" // a line the client read from the app-server's stdout
)

// Line is one line of a transcript. Msg is the line as it crossed (a JSON
// value, with every "email" value replaced by Redacted); a line that was
// not JSON is kept as a JSON string, so the transcript stays one JSON
// object per line.
type Line struct {
	Dir string          `json:"dir"`
	Msg json.RawMessage `json:"msg"`
}

// Redacted is what replaces every "email" value in a transcript.
const Redacted = "[redacted]"

var emailValue = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`"email"\s*:\s*("(?:[^"\\]|\\.)*"|null|true|false|-?[0-9][0-9.eE+-]*)`)
})

// Encode returns the transcript line for one stdio line crossing in dir:
// the line redacted and wrapped, with no trailing newline.
func Encode(dir string, line []byte) ([]byte, error) {
	if dir != DirSend && dir != DirRecv {
		return nil, fmt.Errorf("codex: transcript direction %q is neither %q nor %q", dir, DirSend, DirRecv)
	}
	line = bytes.TrimSpace(line)
	var msg json.RawMessage
	if json.Valid(line) {
		var buf bytes.Buffer
		if err := json.Compact(&buf, emailValue().ReplaceAll(line, []byte(`"email":"`+Redacted+`"`))); err != nil {
			return nil, fmt.Errorf("codex: transcript line: %w", err)
		}
		msg = buf.Bytes()
	} else {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(string(line)); err != nil {
			return nil, fmt.Errorf("codex: transcript line: %w", err)
		}
		msg = bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	}
	// Not json.Marshal: it would escape <, > and & inside the message,
	// and the transcript keeps the line's text as it crossed.
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(Line{Dir: dir, Msg: msg}); err != nil {
		return nil, fmt.Errorf("codex: transcript line: %w", err)
	}
	return bytes.TrimSuffix(out.Bytes(), []byte("\n")), nil
}

// ParseLine reads one transcript line strictly: one JSON object with a
// "dir" of DirSend or DirRecv and a "msg", no other member and neither
// twice. Msg comes back as compact JSON.
func ParseLine(b []byte) (Line, error) {
	var buf bytes.Buffer
	buf.Grow(len(b))
	if err := json.Compact(&buf, b); err != nil {
		return Line{}, lineError(b)
	}
	c := buf.Bytes()
	if c[0] != '{' {
		return Line{}, lineError(b)
	}
	var dir, msg json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(c))
	_, _ = dec.Token() // the '{' (c is one compact object)
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return Line{}, lineError(b)
		}
		var val json.RawMessage
		if err := dec.Decode(&val); err != nil {
			return Line{}, lineError(b)
		}
		switch key, _ := tok.(string); key {
		case "dir":
			if dir != nil {
				return Line{}, errors.New(`two "dir" members`)
			}
			dir = val
		case "msg":
			if msg != nil {
				return Line{}, errors.New(`two "msg" members`)
			}
			msg = val
		default:
			return Line{}, fmt.Errorf("not a {\"dir\",\"msg\"} object: unknown field %q", key)
		}
	}
	var d string
	if dir != nil {
		if err := json.Unmarshal(dir, &d); err != nil {
			return Line{}, fmt.Errorf("dir is %s, not a string", dir)
		}
	}
	if d != DirSend && d != DirRecv {
		return Line{}, fmt.Errorf("dir is %q, neither %q nor %q", d, DirSend, DirRecv)
	}
	if msg == nil {
		return Line{}, errors.New("no msg")
	}
	return Line{Dir: d, Msg: msg}, nil
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

// ParseError is a transcript line that could not be used.
type ParseError struct {
	Line int // 1-based
	Err  error
}

func (e *ParseError) Error() string { return fmt.Sprintf("transcript line %d: %v", e.Line, e.Err) }
func (e *ParseError) Unwrap() error { return e.Err }

// Reader reads a transcript line by line, each at most a cap long (a
// longer one is a *ParseError wrapping a *lines.TooLongError). It is not
// safe for concurrent use.
type Reader struct {
	lr *lines.Reader
	n  int
}

// NewReader reads the transcript r, whose lines are at most maxLine bytes.
func NewReader(r io.Reader, maxLine int) *Reader {
	return &Reader{lr: lines.NewReader(r, maxLine)}
}

// Next returns the next line (blank lines are skipped) with its 1-based
// number in the stream; io.EOF at the end; a *ParseError naming the line
// that could not be read or used.
func (r *Reader) Next() (Line, int, error) {
	for {
		b, err := r.lr.Next()
		if errors.Is(err, io.EOF) {
			return Line{}, 0, io.EOF
		}
		r.n++
		if err != nil {
			return Line{}, 0, &ParseError{Line: r.n, Err: err}
		}
		if len(bytes.TrimSpace(b)) == 0 {
			continue
		}
		l, err := ParseLine(b)
		if err != nil {
			return Line{}, 0, &ParseError{Line: r.n, Err: err}
		}
		return l, r.n, nil
	}
}
