package transcript_test

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/openmax/openmax/internal/lines"
	"github.com/openmax/openmax/provider/codex/transcript"
)

// What Encode writes, ParseLine reads back: the direction, and the line
// as it crossed (compact, emails redacted; a line that was not JSON as a
// JSON string of its text).
func TestEncodeThenParse(t *testing.T) {
	for _, tt := range []struct{ dir, in, msg string }{
		{transcript.DirSend, `{"id":1, "method":"initialize"}`, `{"id":1,"method":"initialize"}`},
		{transcript.DirRecv, `{"id":1,"result":{"account":{"email":"a@b.c"}}}`, `{"id":1,"result":{"account":{"email":"[redacted]"}}}`},
		{transcript.DirRecv, "codex 1.0 <ready> & waiting\r", `"codex 1.0 <ready> & waiting"`},
		{transcript.DirSend, `{"text":"a <b> & c"}`, `{"text":"a <b> & c"}`},
	} {
		b, err := transcript.Encode(tt.dir, []byte(tt.in))
		if err != nil {
			t.Fatal(err)
		}
		l, err := transcript.ParseLine(b)
		if err != nil || l.Dir != tt.dir || string(l.Msg) != tt.msg {
			t.Errorf("ParseLine(%s) = %+v %v, want %s %s", b, l, err, tt.dir, tt.msg)
		}
	}
	if _, err := transcript.Encode("both", []byte(`{}`)); err == nil {
		t.Error("a direction that is neither was encoded")
	}
}

// The reader numbers lines as they stand in the stream, blank ones
// skipped, and names the line it could not use.
func TestReaderNumbersLines(t *testing.T) {
	in := "\n" + `{"dir":"send","msg":{"id":1}}` + "\n  \r\n" + `{"msg":"x","dir":"recv"}` + "\n" +
		`{"dir":"recv","msg":"` + strings.Repeat("x", 100) + `"}` + "\n" + `{"dir":"up","msg":1}` + "\n"
	r := transcript.NewReader(strings.NewReader(in), 64)
	var got []string
	for {
		l, n, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		var pe *transcript.ParseError
		var tl *lines.TooLongError
		switch {
		case errors.As(err, &tl):
			got = append(got, err.Error()+" (too long)")
			continue // the reader goes on past an over-long line
		case errors.As(err, &pe):
			got = append(got, err.Error())
		case err != nil:
			t.Fatal(err)
		default:
			got = append(got, fmt.Sprintf("%d %s %s", n, l.Dir, l.Msg))
			continue
		}
		break
	}
	want := []string{
		`2 send {"id":1}`,
		`4 recv "x"`,
		"transcript line 5: line is 123 bytes, longer than the 64-byte limit; skipped (too long)",
		`transcript line 6: dir is "up", neither "send" nor "recv"`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("read\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
