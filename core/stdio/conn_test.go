package stdio_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"syscall"
	"testing"
	"testing/iotest"
	"time"

	"github.com/openmax/openmax/core/stdio"
	"github.com/openmax/openmax/core/wire"
)

// connWait bounds every wait in these tests (they never sleep).
const connWait = 10 * time.Second

// readOutcome is what one ReadLine returned: a line, or an error
// described by its kind.
type readOutcome struct {
	line    string
	tooLong int64 // the size a *wire.LineTooLongError reported
	err     error // any other error, matched with errors.Is
}

func (o readOutcome) String() string {
	switch {
	case o.tooLong > 0:
		return fmt.Sprintf("too long (%d bytes)", o.tooLong)
	case o.err != nil:
		return fmt.Sprintf("error %v", o.err)
	}
	if len(o.line) > 40 {
		return fmt.Sprintf("line %q… (%d bytes)", o.line[:40], len(o.line))
	}
	return fmt.Sprintf("line %q", o.line)
}

// readAllLines reads from conn until an error other than a per-line
// *wire.LineTooLongError, and returns every outcome.
func readAllLines(conn stdio.Conn) []readOutcome {
	var got []readOutcome
	for {
		line, err := conn.ReadLine()
		var tooLong *wire.LineTooLongError
		switch {
		case errors.As(err, &tooLong):
			got = append(got, readOutcome{tooLong: tooLong.Size})
			continue
		case err != nil:
			return append(got, readOutcome{err: err})
		}
		got = append(got, readOutcome{line: string(line)})
	}
}

func sameOutcomes(got, want []readOutcome) bool {
	return slices.EqualFunc(got, want, func(g, w readOutcome) bool {
		if w.err != nil {
			return errors.Is(g.err, w.err)
		}
		return g.err == nil && g.line == w.line && g.tooLong == w.tooLong
	})
}

var errBoom = errors.New("boom")

// framingCases are the framing of the client's lines, which a stream Conn
// and the in-memory pair share.
var framingCases = []struct {
	name  string
	input []string // the client's writes, in order
	want  []readOutcome
}{
	{"empty input", nil, []readOutcome{{err: io.EOF}}},
	{"lines", []string{"a\n", "\n", "b c\n"}, []readOutcome{{line: "a"}, {line: ""}, {line: "b c"}, {err: io.EOF}}},
	{"CRLF", []string{"a\r\nb\r\n\r\n"}, []readOutcome{{line: "a"}, {line: "b"}, {line: ""}, {err: io.EOF}}},
	{"a lone CR stays", []string{"a\rb\n"}, []readOutcome{{line: "a\rb"}, {err: io.EOF}}},
	{"final line without newline", []string{"a\n", "last"}, []readOutcome{{line: "a"}, {line: "last"}, {err: io.EOF}}},
	{"final line ending in CR", []string{"last\r"}, []readOutcome{{line: "last"}, {err: io.EOF}}},
	{"line split across writes", []string{`{"cmd":`, `"quit"`, "}\r", "\n"}, []readOutcome{{line: `{"cmd":"quit"}`}, {err: io.EOF}}},
	{"two lines in one write", []string{"a\nb\n"}, []readOutcome{{line: "a"}, {line: "b"}, {err: io.EOF}}},
	{"exactly MaxLine", []string{strings.Repeat("x", wire.MaxLine) + "\r\n", "next\n"},
		[]readOutcome{{line: strings.Repeat("x", wire.MaxLine)}, {line: "next"}, {err: io.EOF}}},
	{"over MaxLine is a per-line error, then reading goes on",
		[]string{"before\n", strings.Repeat("x", wire.MaxLine/2), strings.Repeat("x", wire.MaxLine/2+1) + "\n", "after\n"},
		[]readOutcome{{line: "before"}, {tooLong: wire.MaxLine + 1}, {line: "after"}, {err: io.EOF}}},
	{"over MaxLine at the end without newline", []string{strings.Repeat("x", wire.MaxLine+1)},
		[]readOutcome{{tooLong: wire.MaxLine + 1}, {err: io.EOF}}},
}

func TestStreamConnReadsFramedLines(t *testing.T) {
	for _, tc := range framingCases {
		t.Run(tc.name, func(t *testing.T) {
			// One byte per Read as well as whole reads: framing must not
			// depend on how the stream is cut.
			for _, r := range []io.Reader{
				strings.NewReader(strings.Join(tc.input, "")),
				iotest.HalfReader(strings.NewReader(strings.Join(tc.input, ""))),
			} {
				if got := readAllLines(stdio.NewStreamConn(r, io.Discard)); !sameOutcomes(got, tc.want) {
					t.Fatalf("got %v, want %v", got, tc.want)
				}
			}
		})
	}
}

func TestPipeFramesTheClientsBytesAsStdin(t *testing.T) {
	for _, tc := range framingCases {
		t.Run(tc.name, func(t *testing.T) {
			server, client := stdio.NewPipe()
			for _, w := range tc.input {
				if _, err := io.WriteString(client, w); err != nil {
					t.Fatal(err)
				}
			}
			client.CloseWrite()
			if got := readAllLines(server); !sameOutcomes(got, tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestStreamConnReadError(t *testing.T) {
	conn := stdio.NewStreamConn(io.MultiReader(strings.NewReader("a\n"), iotest.ErrReader(errBoom)), io.Discard)
	want := []readOutcome{{line: "a"}, {err: errBoom}}
	if got := readAllLines(conn); !sameOutcomes(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

// writeRecorder records every Write it gets, and fails from the failAt-th
// one on (never when failAt is 0). Read it only after the conn's Flush or
// Close has returned.
type writeRecorder struct {
	writes []string
	failAt int
}

func (w *writeRecorder) Write(p []byte) (int, error) {
	w.writes = append(w.writes, string(p))
	if w.failAt > 0 && len(w.writes) >= w.failAt {
		return 0, syscall.EPIPE
	}
	return len(p), nil
}

// gateWriter hands every Write to the test: the bytes on wrote, then it
// waits for the test's answer on release (nil lets the Write succeed).
type gateWriter struct {
	wrote   chan string
	release chan error
}

func newGateWriter() *gateWriter {
	return &gateWriter{wrote: make(chan string, 1), release: make(chan error)}
}

func (g *gateWriter) Write(p []byte) (int, error) {
	g.wrote <- string(p)
	if err := <-g.release; err != nil {
		return 0, err
	}
	return len(p), nil
}

// wholeLines splits the bytes of Writes into lines, failing unless every
// Write holds whole newline-terminated lines.
func wholeLines(t *testing.T, writes []string) []string {
	t.Helper()
	var lines []string
	for _, wr := range writes {
		body, ok := strings.CutSuffix(wr, "\n")
		if !ok {
			t.Fatalf("a Write that does not end a line: %.80q", wr)
		}
		lines = append(lines, strings.Split(body, "\n")...)
	}
	return lines
}

// TestStreamConnWritesWholeLinesInOrder: whatever the batching, the bytes
// written are the lines in order, each with its newline, and no Write
// splits a line (a huge one included).
func TestStreamConnWritesWholeLinesInOrder(t *testing.T) {
	w := &writeRecorder{}
	conn := stdio.NewStreamConn(strings.NewReader(""), w)
	big := strings.Repeat("y", 2<<20) // over the size whose buffer is not kept
	var want []string
	for i := range 1000 {
		l := fmt.Sprintf(`{"n":%d}`, i)
		if i == 500 {
			l = big
		}
		want = append(want, l)
		if err := conn.WriteLine([]byte(l)); err != nil {
			t.Fatal(err)
		}
	}
	if err := conn.Flush(); err != nil {
		t.Fatal(err)
	}
	if got := wholeLines(t, w.writes); !slices.Equal(got, want) {
		t.Errorf("wrote %d lines, want the %d given, in order", len(got), len(want))
	}
}

// TestStreamConnFlushesALoneLine: a line written while nothing else is
// being written goes out at once, alone, without waiting for more lines
// or for Flush: the flush happens because the writer is idle.
func TestStreamConnFlushesALoneLine(t *testing.T) {
	g := newGateWriter()
	conn := stdio.NewStreamConn(strings.NewReader(""), g)
	for _, l := range []string{"first", "second"} {
		if err := conn.WriteLine([]byte(l)); err != nil {
			t.Fatal(err)
		}
		if got := receive(t, g.wrote); got != l+"\n" {
			t.Fatalf("Write %q, want the lone line %q", got, l+"\n")
		}
		g.release <- nil
	}
}

// TestStreamConnBatchesLinesQueuedDuringAWrite: the lines given while a
// Write is under way go out together in the next Write, right after it.
func TestStreamConnBatchesLinesQueuedDuringAWrite(t *testing.T) {
	g := newGateWriter()
	conn := stdio.NewStreamConn(strings.NewReader(""), g)
	conn.WriteLine([]byte("a"))
	if got := receive(t, g.wrote); got != "a\n" {
		t.Fatalf("first Write %q, want a alone", got)
	}
	for _, l := range []string{"b", "c", "d"} {
		if err := conn.WriteLine([]byte(l)); err != nil {
			t.Fatal(err)
		}
	}
	g.release <- nil
	if got := receive(t, g.wrote); got != "b\nc\nd\n" {
		t.Fatalf("second Write %q, want b, c and d in one Write", got)
	}
	g.release <- nil
	if err := conn.Flush(); err != nil {
		t.Fatal(err)
	}
}

// TestStreamConnBoundsWhatWaits: while a Write is under way at most
// MaxQueued bytes (or one longer line) wait behind it; WriteLine waits for
// room beyond that, so every later Write is bounded too.
func TestStreamConnBoundsWhatWaits(t *testing.T) {
	g := newGateWriter()
	conn := stdio.NewStreamConn(strings.NewReader(""), g)
	line := strings.Repeat("z", 999)
	const n = 10 * stdio.MaxQueued / 1000
	done := make(chan error, 1)
	go func() {
		for range n {
			if err := conn.WriteLine([]byte(line)); err != nil {
				done <- err
				return
			}
		}
		done <- conn.Close()
	}()
	var lines []string
	for len(lines) < n {
		wr := receive(t, g.wrote)
		if len(wr) > stdio.MaxQueued+len(line)+1 {
			t.Fatalf("a Write of %d bytes: more than %d waited behind a Write", len(wr), stdio.MaxQueued)
		}
		lines = append(lines, wholeLines(t, []string{wr})...)
		g.release <- nil
	}
	if err := receive(t, done); err != nil {
		t.Fatal(err)
	}
	if len(lines) != n {
		t.Errorf("wrote %d lines, want %d", len(lines), n)
	}
}

// TestStreamConnWriteFailure: a failed Write closes Failed at once, is
// reported by the next WriteLine, by Flush and by Close, and nothing more
// is written.
func TestStreamConnWriteFailure(t *testing.T) {
	g := newGateWriter()
	conn := stdio.NewStreamConn(strings.NewReader(""), g)
	conn.WriteLine([]byte("a"))
	receive(t, g.wrote)
	if err := conn.WriteLine([]byte("queued behind the failing Write")); err != nil {
		t.Fatal(err)
	}
	g.release <- syscall.EPIPE
	receive(t, conn.Failed())
	if err := conn.WriteLine([]byte("x")); !errors.Is(err, syscall.EPIPE) {
		t.Errorf("WriteLine after a failed Write: %v, want the writer's EPIPE", err)
	}
	if err := conn.Flush(); !errors.Is(err, syscall.EPIPE) {
		t.Errorf("Flush after a failed Write: %v, want EPIPE", err)
	}
	if err := conn.Close(); !errors.Is(err, syscall.EPIPE) {
		t.Errorf("Close after a failed Write: %v, want EPIPE", err)
	}
	select {
	case wr := <-g.wrote:
		t.Errorf("wrote %q after the failure", wr)
	default:
	}
}

// TestStreamConnCloseWritesWhatWasQueued: lines given before Close reach w
// before Close returns; lines given after it are refused.
func TestStreamConnCloseWritesWhatWasQueued(t *testing.T) {
	g := newGateWriter()
	conn := stdio.NewStreamConn(strings.NewReader(""), g)
	conn.WriteLine([]byte("a"))
	receive(t, g.wrote)
	conn.WriteLine([]byte("b"))
	closed := make(chan error, 1)
	go func() { closed <- conn.Close() }()
	g.release <- nil
	if got := receive(t, g.wrote); got != "b\n" {
		t.Fatalf("Write %q, want the queued b", got)
	}
	g.release <- nil
	if err := receive(t, closed); err != nil {
		t.Fatal(err)
	}
	if err := conn.WriteLine([]byte("c")); !errors.Is(err, stdio.ErrClosed) {
		t.Errorf("WriteLine after Close: %v, want ErrClosed", err)
	}
}

func TestStreamConnClose(t *testing.T) {
	w := &writeRecorder{}
	conn := stdio.NewStreamConn(strings.NewReader("a\n"), w)
	if err := conn.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ReadLine(); !errors.Is(err, stdio.ErrClosed) {
		t.Errorf("ReadLine after Close: %v, want ErrClosed", err)
	}
	if err := conn.WriteLine([]byte("x")); !errors.Is(err, stdio.ErrClosed) {
		t.Errorf("WriteLine after Close: %v, want ErrClosed", err)
	}
	if len(w.writes) != 0 {
		t.Errorf("wrote %q after Close", w.writes)
	}
	if err := conn.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestPipeCarriesProtocolLinesWhole(t *testing.T) {
	server, client := stdio.NewPipe()
	ctx := boundedCtx(t)
	lines := []string{`{"type":"hello"}`, "", `{"session_id":"s","type":"token","text":"a\nb"}`}
	for _, l := range lines {
		if err := server.WriteLine([]byte(l)); err != nil {
			t.Fatal(err)
		}
	}
	server.Close()
	for _, want := range lines {
		got, err := client.ReadLine(ctx)
		if err != nil || string(got) != want {
			t.Fatalf("ReadLine: %q, %v; want %q", got, err, want)
		}
	}
	for range 2 { // EOF once the server has closed, and stays so
		if _, err := client.ReadLine(ctx); err != io.EOF {
			t.Fatalf("ReadLine after the server closed: %v, want io.EOF", err)
		}
	}
}

func TestPipeClientWriteLine(t *testing.T) {
	server, client := stdio.NewPipe()
	buf := []byte(`{"cmd":"quit"}`)
	if err := client.WriteLine(buf); err != nil {
		t.Fatal(err)
	}
	copy(buf, "XXXX") // the pipe keeps its own copy
	client.CloseWrite()
	want := []readOutcome{{line: `{"cmd":"quit"}`}, {err: io.EOF}}
	if got := readAllLines(server); !sameOutcomes(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

func TestPipeRefusesLinesHoldingANewline(t *testing.T) {
	server, client := stdio.NewPipe()
	if err := server.WriteLine([]byte("a\nb")); err == nil {
		t.Error("the server end wrote a line holding a newline")
	}
	if err := client.WriteLine([]byte("a\nb")); err == nil {
		t.Error("the client end wrote a line holding a newline")
	}
}

// TestPipeAfterClose: what each end's calls return once either end has
// closed.
func TestPipeAfterClose(t *testing.T) {
	tests := []struct {
		name  string
		close func(server *stdio.PipeConn, client *stdio.PipeClient)
		// What the server's WriteLine, the client's Write and the
		// client's ReadLine return afterwards (nil: they work).
		serverWrite, clientWrite, clientRead error
	}{
		{"client closes its stdin", func(_ *stdio.PipeConn, c *stdio.PipeClient) { c.CloseWrite() },
			nil, stdio.ErrClosed, nil},
		{"client goes away", func(_ *stdio.PipeConn, c *stdio.PipeClient) { c.Close() },
			io.ErrClosedPipe, stdio.ErrClosed, stdio.ErrClosed},
		{"server closes", func(s *stdio.PipeConn, _ *stdio.PipeClient) { s.Close() },
			stdio.ErrClosed, io.ErrClosedPipe, io.EOF},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			server, client := stdio.NewPipe()
			tc.close(server, client)
			if err := server.WriteLine([]byte("x")); !errors.Is(err, tc.serverWrite) || (err == nil) != (tc.serverWrite == nil) {
				t.Errorf("server WriteLine: %v, want %v", err, tc.serverWrite)
			}
			if _, err := client.Write([]byte("y\n")); !errors.Is(err, tc.clientWrite) {
				t.Errorf("client Write: %v, want %v", err, tc.clientWrite)
			}
			line, err := client.ReadLine(boundedCtx(t))
			if tc.clientRead == nil {
				if err != nil || string(line) != "x" {
					t.Errorf("client ReadLine: %q, %v; want the server's line", line, err)
				}
			} else if !errors.Is(err, tc.clientRead) {
				t.Errorf("client ReadLine: %v, want %v", err, tc.clientRead)
			}
		})
	}
}

func TestPipeCloseUnblocksAWaitingRead(t *testing.T) {
	t.Run("server", func(t *testing.T) {
		server, client := stdio.NewPipe()
		io.WriteString(client, "first\n")
		got := make(chan readOutcome, 2)
		go func() {
			for range 2 { // the second read waits: the client sends nothing more
				line, err := server.ReadLine()
				got <- readOutcome{line: string(line), err: err}
			}
		}()
		if o := receive(t, got); o.err != nil || o.line != "first" {
			t.Fatalf("first read: %v", o)
		}
		server.Close()
		if o := receive(t, got); !errors.Is(o.err, stdio.ErrClosed) {
			t.Fatalf("a read waiting when the server end closed: %v, want ErrClosed", o)
		}
	})
	t.Run("client", func(t *testing.T) {
		server, client := stdio.NewPipe()
		server.WriteLine([]byte("first"))
		got := make(chan readOutcome, 2)
		go func() {
			for range 2 {
				line, err := client.ReadLine(context.Background())
				got <- readOutcome{line: string(line), err: err}
			}
		}()
		if o := receive(t, got); o.err != nil || o.line != "first" {
			t.Fatalf("first read: %v", o)
		}
		client.Close()
		if o := receive(t, got); !errors.Is(o.err, stdio.ErrClosed) {
			t.Fatalf("a read waiting when the client end closed: %v, want ErrClosed", o)
		}
	})
}

func TestPipeClientReadLineHonoursCtx(t *testing.T) {
	server, client := stdio.NewPipe()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := client.ReadLine(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("ReadLine with nothing to read and ctx done: %v, want context.Canceled", err)
	}
	server.WriteLine([]byte("kept"))
	// A line already there is returned even when ctx is done: no line is
	// lost to a timeout.
	if line, err := client.ReadLine(ctx); err != nil || string(line) != "kept" {
		t.Fatalf("ReadLine: %q, %v; want the waiting line", line, err)
	}
}

func receive[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(connWait):
		t.Fatalf("nothing within %v", connWait)
		panic("unreachable")
	}
}

func boundedCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), connWait)
	t.Cleanup(cancel)
	return ctx
}

// TestStreamConnWriteLinePieces: a line given in pieces is the line of
// their concatenation. A short one is queued like any line (one Write,
// whole lines). A long one waits for the Write under way and the lines
// queued behind it, then goes out a Write per piece, the newline with the
// last, nothing between them; lines given later follow it. A failed piece
// Write fails the line and the connection, as a failed batch does.
func TestStreamConnWriteLinePieces(t *testing.T) {
	long := [][]byte{[]byte(`{"head":"`), bytes.Repeat([]byte("p"), stdio.MaxQueued), bytes.Repeat([]byte("q"), 10), []byte(`"}`)}
	t.Run("short", func(t *testing.T) {
		w := &writeRecorder{}
		conn := stdio.NewStreamConn(strings.NewReader(""), w)
		conn.WriteLine([]byte("a"))
		if err := conn.WriteLinePieces([][]byte{[]byte("b1"), nil, []byte("b2")}); err != nil {
			t.Fatal(err)
		}
		conn.WriteLine([]byte("c"))
		if err := conn.Flush(); err != nil {
			t.Fatal(err)
		}
		if got := wholeLines(t, w.writes); !slices.Equal(got, []string{"a", "b1b2", "c"}) {
			t.Errorf("lines %q, want a, b1b2, c", got)
		}
	})
	t.Run("long", func(t *testing.T) {
		g := newGateWriter()
		conn := stdio.NewStreamConn(strings.NewReader(""), g)
		conn.WriteLine([]byte("a"))
		if got := receive(t, g.wrote); got != "a\n" {
			t.Fatalf("first Write %q", got)
		}
		conn.WriteLine([]byte("b")) // queued behind the Write under way
		wrote := make(chan error, 1)
		go func() { wrote <- conn.WriteLinePieces(long) }()
		g.release <- nil
		if got := receive(t, g.wrote); got != "b\n" {
			t.Fatalf("second Write %q, want the line queued before the long one", got)
		}
		g.release <- nil
		for i, p := range long {
			want := string(p)
			if i == len(long)-1 {
				want += "\n"
			}
			if got := receive(t, g.wrote); got != want {
				t.Fatalf("Write %d of the long line: %.40q (%d bytes), want its piece %.40q (%d bytes)", i+1, got, len(got), want, len(want))
			}
			g.release <- nil
		}
		if err := receive(t, wrote); err != nil {
			t.Fatal(err)
		}
		conn.WriteLine([]byte("c"))
		if got := receive(t, g.wrote); got != "c\n" {
			t.Fatalf("Write after the long line %q, want c", got)
		}
		g.release <- nil
		if err := conn.Close(); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("a piece fails", func(t *testing.T) {
		w := &writeRecorder{failAt: 2}
		conn := stdio.NewStreamConn(strings.NewReader(""), w)
		if err := conn.WriteLinePieces(long); !errors.Is(err, syscall.EPIPE) {
			t.Fatalf("WriteLinePieces: %v, want the writer's EPIPE", err)
		}
		receive(t, conn.Failed())
		if err := conn.WriteLine([]byte("x")); !errors.Is(err, syscall.EPIPE) {
			t.Errorf("WriteLine after the failure: %v, want EPIPE", err)
		}
		if err := conn.Close(); !errors.Is(err, syscall.EPIPE) {
			t.Errorf("Close after the failure: %v, want EPIPE", err)
		}
		if len(w.writes) != 2 {
			t.Errorf("%d Writes, want none after the one that failed", len(w.writes))
		}
	})
}
