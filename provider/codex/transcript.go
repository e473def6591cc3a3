package codex

import "github.com/openmax/openmax/provider/codex/transcript"

// Directions of a transcript line, seen from the client (the transcript
// is defined in provider/codex/transcript; these are its names).
const (
	DirSend = transcript.DirSend // a line the client wrote to the app-server's stdin
	DirRecv = transcript.DirRecv // a line the client read from the app-server's stdout
)

// TranscriptLine is one line of a transcript: every line that crossed the
// app-server's stdio, in the order the client saw it, as
// {"dir":"send"|"recv","msg":...}, "email" values redacted.
type TranscriptLine = transcript.Line

// Redacted is what replaces every "email" value in a transcript.
const Redacted = transcript.Redacted

// TranscriptBytes returns the transcript line for one stdio line crossing
// in dir: the line redacted and wrapped, with no trailing newline.
func TranscriptBytes(dir string, line []byte) ([]byte, error) { return transcript.Encode(dir, line) }
