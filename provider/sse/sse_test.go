package sse

import (
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/openmax/openmax/provider"
)

func all(t *testing.T, in string) ([]Event, error) {
	t.Helper()
	r := NewReader(strings.NewReader(in))
	var out []Event
	for {
		ev, err := r.Next()
		if err != nil {
			return out, err
		}
		out = append(out, ev)
	}
}

func TestSSERules(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []Event
	}{
		{"basic", "data: a\n\n", []Event{{Type: "message", Data: "a"}}},
		{"multi-line data", "data: a\ndata:b\ndata\n\n", []Event{{Type: "message", Data: "a\nb\n"}}},
		{"event and id", "event: ping\nid: 7\ndata: {}\n\ndata: x\n\n", []Event{{Type: "ping", Data: "{}", ID: "7"}, {Type: "message", Data: "x", ID: "7"}}},
		{"comments and crlf", ": keepalive\r\ndata: a\r\n\r\n", []Event{{Type: "message", Data: "a"}}},
		{"lone cr", "data: a\rdata: b\r\rdata: c\n\n", []Event{{Type: "message", Data: "a\nb"}, {Type: "message", Data: "c"}}},
		{"no data is no event", "event: x\n\ndata: y\n\n", []Event{{Type: "message", Data: "y"}}},
		{"only one space stripped", "data:  two\n\n", []Event{{Type: "message", Data: " two"}}},
		{"unknown fields ignored", "retry: 5\nfoo: bar\ndata: z\n\n", []Event{{Type: "message", Data: "z"}}},
		{"unterminated last event dropped", "data: a\n\ndata: b\n", []Event{{Type: "message", Data: "a"}}},
		{"unterminated last line dropped", "data: a\n\ndata: b", []Event{{Type: "message", Data: "a"}}},
	}
	for _, tt := range tests {
		got, err := all(t, tt.in)
		if !errors.Is(err, io.EOF) {
			t.Errorf("%s: end %v", tt.name, err)
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s:\n got %#v\nwant %#v", tt.name, got, tt.want)
		}
	}
}

type failing struct{ r io.Reader }

func (f failing) Read(p []byte) (int, error) {
	n, err := f.r.Read(p)
	if errors.Is(err, io.EOF) {
		return n, io.ErrUnexpectedEOF
	}
	return n, err
}

func TestReadErrorsSurface(t *testing.T) {
	r := NewReader(failing{strings.NewReader("data: a\n\ndata: b")})
	if _, err := r.Next(); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Next(); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("got %v, want the read error", err)
	}
}

// endless repeats line forever, in reads of varying size.
type endless struct {
	line []byte
	off  int
	n    int
}

func (e *endless) Read(p []byte) (int, error) {
	e.n++
	want := len(p)
	if e.n%3 == 0 && want > 7 {
		want = 7 // some short reads
	}
	for n := 0; n < want; {
		c := copy(p[n:want], e.line[e.off:])
		n += c
		e.off = (e.off + c) % len(e.line)
	}
	return want, nil
}

// TestLimits: an event that never ends and a line that never ends stop at
// their caps with a client-limit error, and the pending data is bounded;
// blank lines, comments and event names repeated forever hold no memory.
func TestLimits(t *testing.T) {
	tests := []struct {
		name string
		line string
		want error
	}{
		{"data lines with no blank line", "data: xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n", ErrEventTooLong},
		{"bare data lines", "data\r\n", ErrEventTooLong},
		{"lone-CR data lines", "data: y\r", ErrLineTooLong}, // read up to an LF, so the line cap hits first
		{"one endless line", "zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz", ErrLineTooLong},
		{"one endless data line", "data: zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz", ErrLineTooLong},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := NewReader(&endless{line: []byte(tt.line)})
			r.maxLine, r.maxEvent = 64<<10, 256<<10
			_, err := r.Next()
			if !errors.Is(err, tt.want) || !errors.Is(err, provider.ErrLimit) || !errors.Is(err, provider.ErrIncomplete) {
				t.Fatalf("got %v, want %v (a client limit)", err, tt.want)
			}
			if r.data.Cap() > r.maxEvent {
				t.Errorf("pending data holds %d bytes past the cap", r.data.Cap())
			}
		})
	}
}

// TestLimitsAtDefaultSize: the real caps, on a body of data lines 1 KiB
// long that no blank line ends (issue 9: it grew to gigabytes).
func TestLimitsAtDefaultSize(t *testing.T) {
	src := &endless{line: []byte("data: " + strings.Repeat("x", 1017) + "\n")}
	r := NewReader(src)
	if _, err := r.Next(); !errors.Is(err, ErrEventTooLong) {
		t.Fatalf("got %v", err)
	}
	if !strings.Contains(ErrEventTooLong.Error(), "16 MiB") {
		t.Errorf("the error does not name the cap: %v", ErrEventTooLong)
	}
}

// TestHarmlessRepeatsAreBounded: blank lines, comments and event lines
// keep no state, so a stream of them only ends with the body (the reply's
// byte cap and deadline bound it, not this reader).
func TestHarmlessRepeatsAreBounded(t *testing.T) {
	for _, line := range []string{"\n", ": keepalive\n", "event: ping\n", "id: 1\n", "\r\n"} {
		in := strings.Repeat(line, 100000)
		r := NewReader(strings.NewReader(in))
		if _, err := r.Next(); !errors.Is(err, io.EOF) {
			t.Errorf("%q: got %v", line, err)
		}
		if r.data.Cap() > 0 {
			t.Errorf("%q: pending data grew to %d", line, r.data.Cap())
		}
	}
}
