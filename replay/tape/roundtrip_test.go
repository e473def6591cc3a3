package tape_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/openmax/openmax/core"
	"github.com/openmax/openmax/core/harness"
	"github.com/openmax/openmax/core/wire"
	"github.com/openmax/openmax/internal/rapidchecks"
	"github.com/openmax/openmax/provider/clock"
	"github.com/openmax/openmax/provider/fake"
	"github.com/openmax/openmax/provider/script"
	"github.com/openmax/openmax/recorder"
	"github.com/openmax/openmax/recorder/cassette"
	"github.com/openmax/openmax/recorder/replay"
	"github.com/openmax/openmax/replay/tape"
)

// fataler is what live needs of *testing.T and *rapid.T.
type fataler interface {
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

// replayOf replays the cassette at path and checks it reproduced the
// recording, returning its transcript.
func replayOf(t fataler, path string) []byte {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(data, []byte("LIVE-SECRET-KEY-0123")) {
		t.Fatal("the key reached the cassette")
	}
	f, err := cassette.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := tape.Replay(ctx, f, tape.ReplayOptions{Serving: replay.Options{Pace: replay.Pace{Mode: replay.PaceInstant}}})
	if err != nil {
		t.Fatal(err)
	}
	// Unused interactions are allowed: a request a cancel overtook live
	// (it went out, its reply was dropped) is not sent again when the
	// cancel lands at its recorded point, and the transcript is the same.
	if p := r.Problems(true); len(p) > 0 {
		t.Fatalf("the replay did not reproduce the recording: %q", p)
	}
	return r.Transcript()
}

// pause is how long the scripted vendor waits before each part of a reply,
// on its own fake clock, which the client below advances.
const pause = time.Second

// clientStep is one thing the recorded client does.
type clientStep struct {
	line   string // written to stdin
	wait   bool   // then wait for the next done
	cancel bool   // then send a cancel at once, and wait for the done
	// cancelAfterToken: wait for the turn's first token line, then cancel
	// and wait for the done.
	cancelAfterToken bool
}

// live records a session: the harness runs against a scripted fake vendor
// over loopback HTTP while the client plays steps, and returns the stdout
// the client saw.
func live(t fataler, dir string, replies []string, steps []clientStep, quit bool, hooks ...core.Hooks) []byte {
	var sc strings.Builder
	sc.WriteString("replies:\n")
	// Every reply streams in two parts, each after a pause on the vendor's
	// clock, which the client advances: a client that cancels after the
	// first token lets only the first part out.
	for _, r := range replies {
		half := len(r) / 2
		fmt.Fprintf(&sc, "  - chunks:\n      - delay: %s\n      - text: %q\n      - delay: %s\n      - text: %q\n      - finish: stop\n", pause, r[:half], pause, r[half:])
	}
	scen, err := script.Parse([]byte(sc.String()))
	if err != nil {
		t.Fatal(err)
	}
	vendorClock := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	// The vendor's handlers are counted, so a step can wait until none of
	// an earlier turn's is left (see settle).
	var (
		vmu     sync.Mutex
		vactive int
	)
	vexited := make(chan struct{}, 1)
	fh := fake.New(scen, fake.Options{Clock: vendorClock}).Handler()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		vmu.Lock()
		vactive++
		vmu.Unlock()
		defer func() {
			vmu.Lock()
			vactive--
			vmu.Unlock()
			select {
			case vexited <- struct{}{}:
			default:
			}
		}()
		fh.ServeHTTP(w, r)
	}))
	defer srv.Close()

	project := filepath.Join(dir, "project")
	if err := os.MkdirAll(project, 0o755); err != nil {
		t.Fatal(err)
	}
	// The key shares no letter with the replies, so the redactor never
	// holds a delta back waiting for the next (which the client may hold).
	env := map[string]string{"OPENAI_API_KEY": "LIVE-SECRET-KEY-0123", "XDG_CONFIG_HOME": filepath.Join(dir, "config")}
	getenv := func(k string) string { return env[k] }
	if _, err := harness.Trust(project, getenv); err != nil {
		t.Fatal(err)
	}
	cfg := harness.Defaults()
	cfg.Provider, cfg.BaseURL, cfg.Project, cfg.SessionID = "openai", srv.URL+"/v1", project, "s-prop"

	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	type result struct {
		code int
		err  error
	}
	res := make(chan result, 1)
	go func() {
		code, err := tape.Record(ctx, inR, outW, tape.RecordOptions{
			Config: cfg, Deps: harness.Deps{Getenv: getenv, Hooks: firstHooks(hooks)},
			Cassette: recorder.Options{Path: filepath.Join(dir, "c.yaml")},
		})
		outW.Close()
		res <- result{code, err}
	}()
	var stdout bytes.Buffer
	dones := make(chan struct{}, 100)
	tokens := make(chan struct{}, 1000)
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		sc := bufio.NewScanner(outR)
		for sc.Scan() {
			stdout.Write(sc.Bytes())
			stdout.WriteByte('\n')
			if strings.Contains(sc.Text(), `"type":"done"`) {
				dones <- struct{}{}
			}
			if strings.Contains(sc.Text(), `"type":"token"`) {
				tokens <- struct{}{}
			}
		}
	}()
	waitDone := func() {
		select {
		case <-dones:
		case <-ctx.Done():
			t.Fatalf("no done")
		}
	}
	// pump lets the vendor's pauses pass, at most n of them (n < 0: any
	// number), until stopped.
	pump := func(n int) (stop func()) {
		pctx, cancel := context.WithCancel(ctx)
		finished := make(chan struct{})
		go func() {
			defer close(finished)
			for i := 0; n < 0 || i < n; i++ {
				if vendorClock.BlockUntil(pctx, 1) != nil {
					return
				}
				vendorClock.Advance(pause)
			}
		}()
		return func() { cancel(); <-finished }
	}
	// asleep is closed once a vendor handler sleeps on the vendor's clock
	// (or ctx2 ends).
	asleep := func(ctx2 context.Context) <-chan struct{} {
		c := make(chan struct{})
		go func() {
			defer close(c)
			vendorClock.BlockUntil(ctx2, 1)
		}()
		return c
	}
	// settle lets every handler of an earlier turn run out: a reply whose
	// turn was cancelled may still be asleep before a part, on the
	// vendor's clock; each is woken until it ends (writing to a closed
	// connection, or finishing), so the pump below moves only this step's
	// reply. A handler still running and not asleep is waited for.
	settle := func() {
		for {
			vmu.Lock()
			n := vactive
			vmu.Unlock()
			if n == 0 {
				return
			}
			if vendorClock.Waiters() > 0 {
				vendorClock.Advance(pause)
				continue
			}
			wctx, wcancel := context.WithCancel(ctx)
			slept := asleep(wctx)
			select {
			case <-slept:
			case <-vexited:
			case <-ctx.Done():
				wcancel()
				t.Fatalf("the vendor's handlers never ended")
			}
			wcancel()
			<-slept
		}
	}
	for _, s := range steps {
		for len(tokens) > 0 {
			<-tokens
		}
		settle()
		var stop func()
		switch {
		case s.wait:
			stop = pump(-1)
		case s.cancelAfterToken:
			stop = pump(1)
		default: // a cancel at once (see below): no part of the reply ever comes
			stop = pump(0)
		}
		io.WriteString(inW, s.line+"\n")
		ended := false // the turn's done was read here already
		if s.cancel {
			// A cancel "at once" goes out once the turn's request has
			// reached the vendor (its handler asleep before the first
			// part, which never comes), or the turn ended without one. A
			// cancel sent earlier could overtake the request, which would
			// then reach the vendor at a moment nothing here can know, and
			// sleep where a later step's pump would wake it instead of
			// its own reply.
			wctx, wcancel := context.WithCancel(ctx)
			slept := asleep(wctx)
			select {
			case <-slept:
			case <-dones:
				ended = true
			case <-ctx.Done():
				wcancel()
				t.Fatalf("no request and no done")
			}
			wcancel()
			<-slept
		}
		if s.cancelAfterToken {
			select {
			case <-tokens:
			case <-dones: // the turn ended first (it was refused, say)
				stop()
				continue
			case <-ctx.Done():
				t.Fatalf("no token")
			}
		}
		if s.cancel || s.cancelAfterToken {
			io.WriteString(inW, `{"cmd":"cancel"}`+"\n")
		}
		if (s.wait || s.cancel || s.cancelAfterToken) && !ended {
			waitDone()
		}
		stop()
	}
	if quit {
		io.WriteString(inW, `{"cmd":"quit"}`+"\n")
	}
	inW.Close()
	r := <-res
	<-readDone
	if r.err != nil {
		t.Fatalf("record: %v", r.err)
	}
	fmt.Fprintf(&stdout, "exit: %d\n", r.code)
	return stdout.Bytes()
}

// TestRapidReplayReproducesRecording is the tape's property: whatever a client
// did live (turns, a cancel right after its user command or after the
// first token, bad lines, blank lines, a quit or EOF), replaying the
// recording gives the very transcript the client saw, byte for byte,
// offline.
//
// What makes a cancel reproducible is where it is anchored: at the
// protocol point where the harness acted on it (stdio's Acting hook), which
// is where a replay delivers it. The client here holds the vendor's next
// part back until its cancel has taken effect; against a real vendor a
// part that arrives while a cancel is on its way races it, and a replay
// delivers the cancel where the harness acted on it.
func TestRapidReplayReproducesRecording(t *testing.T) {
	// Each check records a live session over loopback and replays it:
	// about 25 ms, several times that under the race detector.
	rapidchecks.Use(t, rapidchecks.Pick(300, 30))
	rapid.Check(t, func(t *rapid.T) {
		steps := rapid.SliceOfN(rapid.Custom(func(t *rapid.T) clientStep {
			switch rapid.IntRange(0, 9).Draw(t, "kind") {
			case 0:
				return clientStep{line: "not json"}
			case 1:
				return clientStep{line: "   "}
			case 2:
				return clientStep{line: `{"cmd":"bogus"}`}
			default:
				text := rapid.StringMatching(`[a-z]{1,10}`).Draw(t, "text")
				s := clientStep{line: `{"cmd":"user","text":"` + text + `"}`}
				switch rapid.IntRange(0, 5).Draw(t, "then") {
				case 0:
					s.cancel = true
				case 1:
					s.cancelAfterToken = true
				default:
					s.wait = true
				}
				return s
			}
		}), 1, 6).Draw(t, "steps")
		quit := rapid.Bool().Draw(t, "quit")
		// A reply for every turn: a vendor out of replies answers with an
		// error the harness would retry after a real backoff.
		replies := rapid.SliceOfN(rapid.StringMatching(`[a-z]{2,8}( [a-z]{1,8}){0,6}`), len(steps), len(steps)).Draw(t, "replies")

		dir, err := os.MkdirTemp("", "tape-prop")
		if err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(dir)
		want := live(t, dir, replies, steps, quit)
		if got := replayOf(t, filepath.Join(dir, "c.yaml")); !bytes.Equal(got, want) {
			t.Fatalf("replay differs from the live session:\n--- live\n%s--- replay\n%s", want, got)
		}
	})
}

// An over-long line is kept as its size, not its 8 MiB, and replays as
// the same refusal.
func TestOverlongLineRecordsItsSize(t *testing.T) {
	dir := t.TempDir()
	big := `{"cmd":"user","text":"` + strings.Repeat("x", wire.MaxLine) + `"}`
	want := live(t, dir, []string{"ok"}, []clientStep{{line: big}, {line: `{"cmd":"user","text":"hi"}`, wait: true}}, false)
	if !strings.Contains(string(want), fmt.Sprintf("line is %d bytes", len(big))) {
		t.Fatalf("the live session did not refuse the long line:\n%.2000s", want)
	}
	path := filepath.Join(dir, "c.yaml")
	if fi, err := os.Stat(path); err != nil || fi.Size() > 64<<10 {
		t.Fatalf("cassette: %v, %d bytes; want the refused line kept as its size only", err, fi.Size())
	}
	if got := replayOf(t, path); !bytes.Equal(got, want) {
		t.Fatalf("replay differs from the live session:\n--- live\n%s--- replay\n%s", want, got)
	}
}
