package sse

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"

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
		{"lone-CR data lines", "data: y\r", ErrEventTooLong}, // each CR ends a line, so the data piles up
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

// TestSplit: Split finds the events a Reader does, where each ends, and
// the size of a tail no blank line ends; a lone CR at the end of a whole
// body ends a line.
func TestSplit(t *testing.T) {
	msg := func(data string, end int) Span { return Span{Event: Event{Type: "message", Data: data}, End: end} }
	tests := []struct {
		name string
		in   string
		want []Span
		rest int
	}{
		{"empty", "", nil, 0},
		{"one event", "data: a\n\n", []Span{msg("a", 9)}, 0},
		{"crlf", "data: a\r\n\r\ndata: b\r\n\r\n", []Span{msg("a", 11), msg("b", 22)}, 0},
		{"lone cr to the end", "data: a\r\rdata: b\r\r", []Span{msg("a", 9), msg("b", 18)}, 0},
		{"mixed line ends", "data: a\n\r\ndata: b\r\n\n", []Span{msg("a", 10), msg("b", 20)}, 0},
		{"named", "event: ping\ndata: {}\n\nevent:\ndata: x\n\n", []Span{
			{Event: Event{Type: "ping", Data: "{}"}, Named: true, End: 22},
			{Event: Event{Type: "message", Data: "x"}, End: 38},
		}, 0},
		{"named message", "event: message\ndata: x\n\n", []Span{{Event: Event{Type: "message", Data: "x"}, Named: true, End: 24}}, 0},
		{"id carried", "id: 7\ndata: a\n\ndata: b\n\n", []Span{{Event: Event{Type: "message", Data: "a", ID: "7"}, End: 15}, {Event: Event{Type: "message", Data: "b", ID: "7"}, End: 24}}, 0},
		{"unterminated event", "data: a\n\ndata: b\n", []Span{msg("a", 9)}, 8},
		{"unterminated line", "data: a\n\ndata: b", []Span{msg("a", 9)}, 7},
		{"unterminated comment", "data: a\n\n: ping", []Span{msg("a", 9)}, 6},
		{"blank lines and comments after", "data: a\n\n\n: ping\n\n", []Span{msg("a", 9)}, 0},
		{"comment inside an open event", "data: a\n\ndata: b\n: ping\n", []Span{msg("a", 9)}, 15},
		{"event without data ends at its blank line", "event: x\n\n", nil, 0},
		{"event without data, open", "data: a\n\nevent: x\n", []Span{msg("a", 9)}, 9},
		{"trailing cr of a crlf split nowhere", "data: a\r", nil, 8},
		{"data lines joined", "data: a\rdata:b\ndata\n\n", []Span{msg("a\nb\n", 21)}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, rest := Split(tt.in)
			if !reflect.DeepEqual(got, tt.want) || rest != tt.rest {
				t.Errorf("Split(%q):\n got %#v, rest %d\nwant %#v, rest %d", tt.in, got, rest, tt.want, tt.rest)
			}
		})
	}
}

// pieces is a stream read in the given pieces, one a Read. After the last
// it returns end (io.EOF when nil); a Read after that fails the test.
type pieces struct {
	t interface {
		Errorf(format string, args ...any)
	}
	parts []string
	end   error
	done  bool
}

func (p *pieces) Read(b []byte) (int, error) {
	if len(p.parts) == 0 {
		if p.done {
			p.t.Errorf("read again after the end")
		}
		p.done = true
		if p.end == nil {
			return 0, io.EOF
		}
		return 0, p.end
	}
	n := copy(b, p.parts[0])
	if p.parts[0] = p.parts[0][n:]; p.parts[0] == "" {
		p.parts = p.parts[1:]
	}
	return n, nil
}

// errLater stands for a live stream that has sent nothing more yet: a
// Reader that gets it wanted more bytes than it needed.
var errLater = errors.New("nothing more yet")

// TestLineEnds: CR, LF and CRLF each end a line however the stream is cut
// into reads: a CR at the end of a read ends its line at once (the event
// it ends goes out before any more is read, and at the end of the stream
// nothing is lost), and an LF that comes next, in a later read, is the
// rest of that line end and no empty line.
func TestLineEnds(t *testing.T) {
	msg := func(data string) Event { return Event{Type: "message", Data: data} }
	tests := []struct {
		name  string
		reads []string
		end   error // after the reads; nil: io.EOF
		want  []Event
	}{
		{"lone CR to the end of the stream", []string{"data: a\r\r"}, nil, []Event{msg("a")}},
		{"lone CRs, one byte a read", strings.Split("data: a\rdata: b\r\rdata: c\r\r", ""), nil, []Event{msg("a\nb"), msg("c")}},
		{"the stream ends between CR and CR", []string{"data: a\r", "\r"}, nil, []Event{msg("a")}},
		{"CRLF cut after its CR", []string{"data: a\r", "\ndata: b\r", "\n\r", "\n"}, nil, []Event{msg("a\nb")}},
		{"CRLF cut after its CR, then a blank line", []string{"data: a\r", "\n\r", "\n", "\ndata: b\n\n"}, nil, []Event{msg("a"), msg("b")}},
		{"CR then LF as two line ends", []string{"data: a\n\r", "\n", "data: b\n\n"}, nil, []Event{msg("a"), msg("b")}},
		{"LF CR is two line ends", []string{"data: a\n\rdata: b\n\n"}, nil, []Event{msg("a"), msg("b")}},
		{"a CR-ended event goes out before more is read", []string{"data: a\r\r"}, errLater, []Event{msg("a")}},
		{"so does one cut after its last CR", []string{"event: x\rdata: a\r", "\r"}, errLater, []Event{{Type: "x", Data: "a"}}},
		{"a CR, and no more yet, is one line end", []string{"data: a\r"}, errLater, nil},
		{"an unterminated last line is dropped", []string{"data: a\r\rdata: b"}, nil, []Event{msg("a")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := NewReader(&pieces{t: t, parts: slices.Clone(tt.reads), end: tt.end})
			var got []Event
			var err error
			for {
				var ev Event
				if ev, err = r.Next(); err != nil {
					break
				}
				got = append(got, ev)
			}
			wantEnd := tt.end
			if wantEnd == nil {
				wantEnd = io.EOF
			}
			if !errors.Is(err, wantEnd) {
				t.Errorf("ended with %v, want %v", err, wantEnd)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("reads %q:\n got %#v\nwant %#v", tt.reads, got, tt.want)
			}
		})
	}
}

// TestRapidReaderAgreesWithSplit: a Reader finds the events Split finds in
// the same body, however the body is cut into reads, whatever its line
// ends (a CR last included), and ends with io.EOF.
func TestRapidReaderAgreesWithSplit(t *testing.T) {
	lines := []string{"data: a", "data:b", "data", "data: ", "event: x", "event:", "id: 3", "id", ": c", ":", "retry: 1", "", "data: {\"k\":1}", "data: é"}
	rapid.Check(t, func(t *rapid.T) {
		var b strings.Builder
		for range rapid.IntRange(0, 16).Draw(t, "lines") {
			b.WriteString(rapid.SampledFrom(lines).Draw(t, "line"))
			b.WriteString(rapid.SampledFrom([]string{"\n", "\r\n", "\r"}).Draw(t, "end"))
		}
		b.WriteString(rapid.SampledFrom([]string{"", "data: z", "\r", "\n", "\r\n"}).Draw(t, "tail"))
		body := b.String()
		var reads []string
		for rest := body; rest != ""; {
			n := min(rapid.IntRange(1, 8).Draw(t, "read size"), len(rest))
			reads = append(reads, rest[:n])
			rest = rest[n:]
		}
		got := readToEOF(t, body, reads)
		spans, _ := Split(body)
		var want []Event
		for _, s := range spans {
			want = append(want, s.Event)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("reads %q:\nReader %#v\nSplit  %#v", reads, got, want)
		}
	})
}

// TestSplitAgreesWithReader: on bodies built from random lines and line
// ends, read whole, Split finds the events a Reader reads, each ending
// where a blank line does.
func TestSplitAgreesWithReader(t *testing.T) {
	pieces := []string{"data: a", "data:b", "data", "event: x", "event:", "id: 3", ": c", "retry: 1", "", "data: {\"k\":1}"}
	ends := []string{"\n", "\r\n", "\r"}
	rng := rand.New(rand.NewPCG(1, 2))
	for n := 0; n < 2000; n++ {
		var b strings.Builder
		for range rng.IntN(12) {
			b.WriteString(pieces[rng.IntN(len(pieces))])
			b.WriteString(ends[rng.IntN(len(ends))])
		}
		b.WriteString("\n")
		body := b.String()
		want, err := all(t, body)
		if !errors.Is(err, io.EOF) {
			t.Fatalf("%q: %v", body, err)
		}
		spans, rest := Split(body)
		var got []Event
		for _, s := range spans {
			got = append(got, s.Event)
			if c := body[s.End-1]; c != '\n' && c != '\r' {
				t.Errorf("%q: an event ends at %d, not at a line end", body, s.End)
			}
			if _, r := Split(body[:s.End]); r != 0 {
				t.Errorf("%q: the body up to an event's end (%d) leaves %d B open", body, s.End, r)
			}
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%q:\nSplit  %#v\nReader %#v", body, got, want)
		}
		if rest < 0 || rest > len(body) {
			t.Errorf("%q: rest %d", body, rest)
		}
	}
}

// TestLinesAroundTheReadBuffer: lines shorter than the read buffer (handed
// out where they lie in it), as long as it and several times longer
// (gathered over reads) come back whole, event after event, whether the
// stream arrives in one read or in reads that cut the lines anywhere.
func TestLinesAroundTheReadBuffer(t *testing.T) {
	tests := []struct {
		name string
		data []string // one event per element
	}{
		{"short lines", []string{"a", "bc", "def"}},
		{"a line the size of the buffer", []string{strings.Repeat("x", readBuf), "after"}},
		{"a line just past the buffer", []string{strings.Repeat("y", readBuf-len("data: ")+1), "after"}},
		{"lines several buffers long", []string{strings.Repeat("z", 3*readBuf+17), "mid", strings.Repeat("w", 2*readBuf)}},
	}
	for _, tt := range tests {
		var b strings.Builder
		var want []Event
		for i, d := range tt.data {
			end := []string{"\n", "\r\n", "\r"}[i%3]
			b.WriteString("data: " + d + end + end)
			want = append(want, Event{Type: "message", Data: d})
		}
		body := b.String()
		for _, size := range []int{len(body), readBuf - 1, 1000, 7} {
			t.Run(fmt.Sprintf("%s/reads of %d", tt.name, size), func(t *testing.T) {
				var reads []string
				for rest := body; rest != ""; {
					n := min(size, len(rest))
					reads = append(reads, rest[:n])
					rest = rest[n:]
				}
				got := readToEOF(t, body, reads)
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("got %d events, want %d; equal: %v", len(got), len(want), reflect.DeepEqual(got, want))
				}
			})
		}
	}
}

// readToEOF reads body, arriving as reads, with a Reader to its end: the
// events, failing t when the stream ends with anything but io.EOF.
func readToEOF(t interface {
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
}, body string, reads []string) []Event {
	r := NewReader(&pieces{t: t, parts: reads})
	var got []Event
	for {
		ev, err := r.Next()
		if err != nil {
			if !errors.Is(err, io.EOF) {
				t.Fatalf("%q: ended with %v", body, err)
			}
			return got
		}
		got = append(got, ev)
	}
}
