package codex

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
)

// Directions of a transcript line, seen from the client.
const (
	DirSend = "send" // a line the client wrote to the app-server's stdin
	DirRecv = "recv" // a line the client read from the app-server's stdout
)

// TranscriptLine is one line of a transcript: every line that crossed the
// app-server's stdio, in the order the client saw it, as
// {"dir":"send"|"recv","msg":...}. Msg is the line as it crossed (a JSON
// value, with every "email" value replaced by "[redacted]"); a line that
// was not JSON is kept as a JSON string so the transcript stays one JSON
// object per line.
type TranscriptLine struct {
	Dir string          `json:"dir"`
	Msg json.RawMessage `json:"msg"`
}

// Redacted is what replaces every "email" value in a transcript.
const Redacted = "[redacted]"

var emailValue = regexp.MustCompile(`"email"\s*:\s*("(?:[^"\\]|\\.)*"|null|true|false|-?[0-9][0-9.eE+-]*)`)

// TranscriptBytes returns the transcript line for one stdio line crossing
// in dir: the line redacted and wrapped, with no trailing newline.
func TranscriptBytes(dir string, line []byte) ([]byte, error) {
	if dir != DirSend && dir != DirRecv {
		return nil, fmt.Errorf("codex: transcript direction %q is neither %q nor %q", dir, DirSend, DirRecv)
	}
	line = bytes.TrimSpace(line)
	var msg json.RawMessage
	if json.Valid(line) {
		var buf bytes.Buffer
		if err := json.Compact(&buf, emailValue.ReplaceAll(line, []byte(`"email":"`+Redacted+`"`))); err != nil {
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
	if err := enc.Encode(TranscriptLine{Dir: dir, Msg: msg}); err != nil {
		return nil, fmt.Errorf("codex: transcript line: %w", err)
	}
	return bytes.TrimSuffix(out.Bytes(), []byte("\n")), nil
}
