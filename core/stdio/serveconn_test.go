package stdio_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"iter"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/openmax/openmax/core"
	"github.com/openmax/openmax/core/stdio"
	"github.com/openmax/openmax/core/tool"
	"github.com/openmax/openmax/core/wire"
	"github.com/openmax/openmax/provider"
)

// connEngine is an Engine whose model answers every request with the given
// parts' stream.
func connEngine(t *testing.T, stream func(ctx context.Context, yield func(provider.Part) bool)) *core.Engine {
	t.Helper()
	reg, err := tool.NewRegistry()
	if err != nil {
		t.Fatal(err)
	}
	model := provider.Func(func(ctx context.Context, _ provider.Request) iter.Seq[provider.Part] {
		return func(yield func(provider.Part) bool) { stream(ctx, yield) }
	})
	return &core.Engine{Provider: model, Tools: reg, Model: "scripted"}
}

// served is what a session wrote and returned.
type served struct {
	lines []string
	code  int
	err   error
}

// connTransports serve a session whose client sends stdin at once and then
// closes it, over each kind of Conn.
var connTransports = []struct {
	name  string
	serve func(t *testing.T, stdin string, opts stdio.Options) served
}{
	{"stream", func(t *testing.T, stdin string, opts stdio.Options) served {
		w := &writeRecorder{}
		code, err := stdio.Serve(context.Background(), strings.NewReader(stdin), w, opts)
		return served{wholeLines(t, w.writes), code, err} // each Write whole lines
	}},
	{"pipe", func(t *testing.T, stdin string, opts stdio.Options) served {
		server, client := stdio.NewPipe()
		io.WriteString(client, stdin)
		client.CloseWrite()
		code, err := stdio.ServeConn(context.Background(), server, opts)
		var lines []string
		ctx := boundedCtx(t)
		for {
			l, rerr := client.ReadLine(ctx)
			if errors.Is(rerr, io.EOF) { // ServeConn closed its end
				return served{lines, code, err}
			}
			if rerr != nil {
				t.Fatalf("reading the server's lines: %v", rerr)
			}
			lines = append(lines, string(l))
		}
	}},
}

func TestServeConnOverEachConn(t *testing.T) {
	user := func(text string) string { return `{"cmd":"user","text":"` + text + `"}` }
	tests := []struct {
		name  string
		stdin string
		types []string // of the lines after hello
	}{
		{"one done per user", user("") + "\n" + user("one") + "\r\n" + `{"cmd":"quit"}`,
			[]string{"protocol_error", "done", "budget", "token", "message_done", "done"}},
		{"EOF ends the session like quit", user("one") + "\n",
			[]string{"budget", "token", "message_done", "done"}},
		{"an over-long line is answered and reading goes on", strings.Repeat(" ", wire.MaxLine+1) + "\n" + user("one") + "\n",
			[]string{"protocol_error", "budget", "token", "message_done", "done"}},
	}
	eng := connEngine(t, func(_ context.Context, yield func(provider.Part) bool) {
		_ = yield(provider.TextDelta{Text: "hi"}) && yield(provider.Finish{Reason: "stop"})
	})
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var first []string
			for _, tr := range connTransports {
				got := tr.serve(t, tc.stdin, stdio.Options{Engine: eng, SessionID: "s-conn", Version: "0.0.0-test", Project: "/p"})
				if got.err != nil || got.code != 0 {
					t.Fatalf("%s: Serve returned %d, %v", tr.name, got.code, got.err)
				}
				c := wire.NewChecker(wire.Strict())
				c.SetInput([]byte(tc.stdin)) // every user command gets exactly one done
				var types []string
				for i, l := range got.lines {
					if err := c.Line([]byte(l)); err != nil {
						t.Fatalf("%s: line %d %s: %v", tr.name, i+1, l, err)
					}
					var typ struct{ Type string }
					if err := json.Unmarshal([]byte(l), &typ); err != nil {
						t.Fatal(err)
					}
					types = append(types, typ.Type)
				}
				if err := c.End(); err != nil {
					t.Fatalf("%s: at the end: %v", tr.name, err)
				}
				if want := append([]string{"hello"}, tc.types...); !slices.Equal(types, want) {
					t.Fatalf("%s: line types %v, want %v", tr.name, types, want)
				}
				if first == nil {
					first = got.lines
				} else if !slices.Equal(got.lines, first) {
					t.Errorf("%s wrote\n%s\nbut %s wrote\n%s", tr.name, strings.Join(got.lines, "\n"), connTransports[0].name, strings.Join(first, "\n"))
				}
			}
		})
	}
}

// TestServeConnStdoutGone: when the client's stdout goes away in the middle
// of a turn, the next write fails, the server says so on its log, cancels
// the turn, and returns the write error.
func TestServeConnStdoutGone(t *testing.T) {
	tests := []struct {
		name string
		// start serves a session over a fresh connection with stdin
		// already sent and closed; it returns a function reading the
		// server's next line and one making its stdout go away.
		start   func(t *testing.T, stdin string, opts stdio.Options, result chan<- served) (next func() string, gone func())
		wantErr error
	}{
		{"pipe: the client closes", func(t *testing.T, stdin string, opts stdio.Options, result chan<- served) (func() string, func()) {
			server, client := stdio.NewPipe()
			io.WriteString(client, stdin)
			client.CloseWrite()
			go func() {
				code, err := stdio.ServeConn(context.Background(), server, opts)
				result <- served{code: code, err: err}
			}()
			ctx := boundedCtx(t)
			next := func() string {
				l, err := client.ReadLine(ctx)
				if err != nil {
					t.Fatalf("reading: %v", err)
				}
				return string(l)
			}
			return next, func() { client.Close() }
		}, io.ErrClosedPipe},
		{"stream: the read end of an OS pipe closes (EPIPE)", func(t *testing.T, stdin string, opts stdio.Options, result chan<- served) (func() string, func()) {
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { r.Close(); w.Close() })
			go func() {
				code, err := stdio.Serve(context.Background(), strings.NewReader(stdin), w, opts)
				result <- served{code: code, err: err}
			}()
			br := bufio.NewReader(r)
			next := func() string {
				l, err := br.ReadString('\n')
				if err != nil {
					t.Fatalf("reading: %v", err)
				}
				return strings.TrimSuffix(l, "\n")
			}
			return next, func() { r.Close() }
		}, syscall.EPIPE},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			goneCh := make(chan struct{})
			cancelled := make(chan error, 1)
			eng := connEngine(t, func(ctx context.Context, yield func(provider.Part) bool) {
				if !yield(provider.TextDelta{Text: "a"}) {
					return
				}
				<-goneCh
				if !yield(provider.TextDelta{Text: "b"}) { // this line finds stdout gone
					return
				}
				<-ctx.Done() // so the turn ends only when the server cancels it
				cancelled <- ctx.Err()
			})
			var log lockedBuffer
			result := make(chan served, 1)
			next, gone := tc.start(t, `{"cmd":"user","text":"go"}`+"\n",
				stdio.Options{Engine: eng, SessionID: "s-gone", Log: &log}, result)
			for _, want := range []string{`"hello"`, `"budget"`, `"token"`} {
				if l := next(); !strings.Contains(l, `"type":`+want) {
					t.Fatalf("got %s, want a %s line", l, want)
				}
			}
			gone()
			close(goneCh)
			if err := receive(t, cancelled); !errors.Is(err, context.Canceled) {
				t.Errorf("the turn ended with %v, want it cancelled", err)
			}
			res := receive(t, result)
			if !errors.Is(res.err, tc.wantErr) || !strings.HasPrefix(res.err.Error(), "wire: write: ") {
				t.Errorf("Serve returned %v, want the write error (%v)", res.err, tc.wantErr)
			}
			if !strings.Contains(log.String(), "; shutting down") {
				t.Errorf("log %q does not say the server shut down", log.String())
			}
		})
	}
}

// lockedBuffer is a bytes.Buffer safe for the server's log writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// chanWriter is a stdout that hands every Write to the test, and fails
// the Writes holding failOn (when set) with EPIPE.
type chanWriter struct {
	wrote  chan string
	failOn string
}

func (w *chanWriter) Write(p []byte) (int, error) {
	w.wrote <- string(p)
	if w.failOn != "" && strings.Contains(string(p), w.failOn) {
		return 0, syscall.EPIPE
	}
	return len(p), nil
}

// TestServeStreamsALoneTokenAtOnce: a token whose stream then pauses (the
// model has not sent the next part) reaches stdout during the pause: the
// batching stdout never holds a line while nothing else is coming.
func TestServeStreamsALoneTokenAtOnce(t *testing.T) {
	pause := make(chan struct{})
	eng := connEngine(t, func(ctx context.Context, yield func(provider.Part) bool) {
		if !yield(provider.TextDelta{Text: "lone"}) {
			return
		}
		<-pause // the model is thinking; nothing more is written meanwhile
		yield(provider.Finish{Reason: "stop"})
	})
	w := &chanWriter{wrote: make(chan string, 16)}
	stdinR, stdinW := io.Pipe()
	result := make(chan served, 1)
	go func() {
		code, err := stdio.Serve(context.Background(), stdinR, w, stdio.Options{Engine: eng, SessionID: "s-lone"})
		result <- served{code: code, err: err}
	}()
	go io.WriteString(stdinW, `{"cmd":"user","text":"go"}`+"\n")
	var got []string
	for !slices.ContainsFunc(got, func(l string) bool { return strings.Contains(l, `"type":"token"`) }) {
		got = append(got, wholeLines(t, []string{receive(t, w.wrote)})...)
	}
	if last := got[len(got)-1]; last != `{"session_id":"s-lone","type":"token","text":"lone"}` {
		t.Errorf("last line before the pause %s, want the token", last)
	}
	close(pause)
	stdinW.Close()
	for {
		select {
		case res := <-result:
			if res.err != nil || res.code != 0 {
				t.Fatalf("Serve: %d, %v", res.code, res.err)
			}
			return
		case <-w.wrote:
		}
	}
}

// TestServeStdoutGoneWhileTheTurnIsQuiet: the Write carrying a token fails
// after the turn has gone quiet (it waits on the model and will write
// nothing more): the session still learns stdout is gone, cancels the turn
// and returns the write error, as when a WriteLine itself fails.
func TestServeStdoutGoneWhileTheTurnIsQuiet(t *testing.T) {
	cancelled := make(chan error, 1)
	eng := connEngine(t, func(ctx context.Context, yield func(provider.Part) bool) {
		if !yield(provider.TextDelta{Text: "last words"}) {
			return
		}
		<-ctx.Done() // only the server's cancel ends this turn
		cancelled <- ctx.Err()
	})
	w := &chanWriter{wrote: make(chan string, 64), failOn: `"type":"token"`}
	var log lockedBuffer
	stdinR, stdinW := io.Pipe()
	t.Cleanup(func() { stdinW.Close() })
	result := make(chan served, 1)
	go func() {
		code, err := stdio.Serve(context.Background(), stdinR, w, stdio.Options{Engine: eng, SessionID: "s-quiet", Log: &log})
		result <- served{code: code, err: err}
	}()
	go io.WriteString(stdinW, `{"cmd":"user","text":"go"}`+"\n")
	if err := receive(t, cancelled); !errors.Is(err, context.Canceled) {
		t.Errorf("the turn ended with %v, want it cancelled", err)
	}
	stdinW.Close()
	res := receive(t, result)
	if !errors.Is(res.err, syscall.EPIPE) || !strings.HasPrefix(res.err.Error(), "wire: write: ") {
		t.Errorf("Serve returned %v, want the write error (EPIPE)", res.err)
	}
	if !strings.Contains(log.String(), "; shutting down") {
		t.Errorf("log %q does not say the server shut down", log.String())
	}
}

// TestServeLongReply: a reply of many 64 KiB pieces (escapes and
// multi-byte characters cut across the pieces) reaches stdout through
// Serve as its token lines and one message_done holding the whole text,
// byte for byte the line of MessageDone{Text}, the stream passing the
// strict checker, over a StreamConn (message_done written from its pieces)
// as over the in-memory pipe (joined).
func TestServeLongReply(t *testing.T) {
	chunk := "a \"quoted\" <chunk> ünï€ \u2028\n\t😀 "
	var text strings.Builder
	eng := connEngine(t, func(_ context.Context, yield func(provider.Part) bool) {
		for range 4000 { // about 160 KB encoded: three pieces
			if !yield(provider.TextDelta{Text: chunk}) {
				return
			}
		}
		yield(provider.Finish{Reason: "stop"})
	})
	for range 4000 {
		text.WriteString(chunk)
	}
	stdin := `{"cmd":"user","text":"go"}` + "\n"
	wantDone, _ := wire.AppendEvent(nil, "s-long", wire.MessageDone{Text: text.String()})
	for _, tr := range []struct {
		name  string
		serve func() served
	}{
		{"stream", func() served {
			w := &writeRecorder{}
			code, err := stdio.Serve(context.Background(), strings.NewReader(stdin), w, stdio.Options{Engine: eng, SessionID: "s-long"})
			if !slices.ContainsFunc(w.writes, func(wr string) bool { return !strings.HasSuffix(wr, "\n") }) {
				t.Error("no Write held part of a line: message_done was not written from its pieces")
			}
			all := strings.Join(w.writes, "")
			return served{strings.Split(strings.TrimSuffix(all, "\n"), "\n"), code, err}
		}},
		{"pipe", func() served {
			return connTransports[1].serve(t, stdin, stdio.Options{Engine: eng, SessionID: "s-long"})
		}},
	} {
		t.Run(tr.name, func(t *testing.T) {
			got := tr.serve()
			if got.err != nil || got.code != 0 {
				t.Fatalf("Serve returned %d, %v", got.code, got.err)
			}
			c := wire.NewChecker(wire.Strict())
			c.SetInput([]byte(stdin))
			var tokens strings.Builder
			dones := 0
			for i, l := range got.lines {
				if err := c.Line([]byte(l)); err != nil {
					t.Fatalf("line %d (%.80s): %v", i+1, l, err)
				}
				var ev struct{ Type, Text string }
				if err := json.Unmarshal([]byte(l), &ev); err != nil {
					t.Fatal(err)
				}
				switch ev.Type {
				case "token":
					tokens.WriteString(ev.Text)
				case "message_done":
					dones++
					if l != string(wantDone[:len(wantDone)-1]) {
						t.Errorf("message_done is %d bytes, not the %d of the line of its text", len(l), len(wantDone)-1)
					}
				}
			}
			if err := c.End(); err != nil {
				t.Fatal(err)
			}
			if tokens.String() != text.String() || dones != 1 {
				t.Errorf("token lines hold %d bytes of the %d-byte text; %d message_done lines", tokens.Len(), text.Len(), dones)
			}
		})
	}
}
