package sweep

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openmax/openmax/recorder/cassette"
	"github.com/openmax/openmax/recorder/edit"
)

// Lines of a fake transcript, as openmax writes them.
const (
	hello = `{"type":"hello","proto":"openmax-stdio/6","protocol_version":6,"session_id":"s1","version":"0","project":"/p","continued":false}`
	bud   = `{"session_id":"s1","type":"budget","used_tokens":1,"context_tokens":100}`
	tok   = `{"session_id":"s1","type":"token","text":"hi"}`
	msg   = `{"session_id":"s1","type":"message_done","text":"hi"}`
	retry = `{"session_id":"s1","type":"retry","attempt":2,"max_attempts":4,"reason":"429"}`
	errl  = `{"session_id":"s1","type":"error","message":"reply truncated: died"}`
)

func done(stop string) string {
	return fmt.Sprintf(`{"session_id":"s1","type":"done","stop_reason":%q}`, stop)
}

func toolStart(id string) string {
	return fmt.Sprintf(`{"session_id":"s1","type":"tool_start","call_id":%q,"name":"echo","args":{}}`, id)
}

func toolEnd(id string) string {
	return fmt.Sprintf(`{"session_id":"s1","type":"tool_end","call_id":%q,"ok":true,"output":""}`, id)
}

func lines(ls ...string) []byte { return []byte(strings.Join(ls, "\n") + "\n") }

// faulted reports the op injected into f, or "" for the unmodified one.
func faulted(f *cassette.File) string {
	for _, it := range f.Interactions {
		if v := it.Response.Headers.Get(edit.InjectedHeader); v != "" {
			return v
		}
	}
	return ""
}

// twoTurns is a cassette with two user commands and two replies, the
// first of which calls a tool ("call_cut" appears in no other reply).
func twoTurns() *cassette.File {
	f := testFile(
		sse("data: {\"tool_calls\":[{\"id\":\"call_cut\"}]}\n\n", "data: [DONE]\n\n"),
		sse("data: {\"content\":\"hi\"}\n\n", "data: [DONE]\n\n"),
	)
	f.Session.Commands = append(f.Session.Commands, cassette.Command{AfterLines: 5, Line: `{"cmd":"user","text":"again"}`})
	return f
}

// good answers every user command with one clean turn.
func good(_ context.Context, f *cassette.File) (Result, error) {
	return Result{Stdout: lines(hello, bud, tok, msg, done("stop"), bud, tok, msg, done("stop"))}, nil
}

func TestBrokenReplayersAreCaught(t *testing.T) {
	tests := []struct {
		name    string
		replay  Replayer
		variant string // the row that must fail ("" for every row)
		want    string // in its failures
	}{
		{"two dones", func(_ context.Context, f *cassette.File) (Result, error) {
			return Result{Stdout: lines(hello, bud, tok, msg, done("stop"), done("stop"), bud, done("stop"))}, nil
		}, "", "check: line 6: done: done with no turn open"},
		{"a missing done", func(_ context.Context, f *cassette.File) (Result, error) {
			return Result{Stdout: lines(hello, bud, tok, msg, done("stop"))}, nil
		}, "", "2 user commands were admitted"},
		{"a panic in the replay", func(_ context.Context, f *cassette.File) (Result, error) {
			if faulted(f) == "truncate@1:chunk=1" {
				panic("boom")
			}
			return good(nil, f)
		}, "truncate@1:chunk=1", "panic: boom"},
		{"a panic the harness recovered", func(_ context.Context, f *cassette.File) (Result, error) {
			r, _ := good(nil, f)
			r.Panics = []string{"nil map"}
			return r, nil
		}, "", "panic: nil map"},
		{"a replay error", func(_ context.Context, f *cassette.File) (Result, error) {
			if faulted(f) == "503@1" {
				return Result{}, errors.New("no engine\nmore")
			}
			return good(nil, f)
		}, "503@1", "replay: no engine ..."},
		{"a retry after text", func(_ context.Context, f *cassette.File) (Result, error) {
			if faulted(f) == "reset@0:byte=0" {
				return Result{Stdout: lines(hello, bud, tok, retry, tok, msg, done("stop"), bud, done("stop"))}, nil
			}
			return good(nil, f)
		}, "reset@0:byte=0", "retry-after-text: line 4"},
		{"a tool run from a cut reply", func(_ context.Context, f *cassette.File) (Result, error) {
			if faulted(f) == "truncate@0:chunk=1" {
				return Result{Stdout: lines(hello, bud, toolStart("call_cut"), toolEnd("call_cut"), errl, done("truncated"), bud, done("stop"))}, nil
			}
			return good(nil, f)
		}, "truncate@0:chunk=1", "cut-tool: line 3 runs tool call call_cut"},
		{"a recorded turn that does not run", func(_ context.Context, f *cassette.File) (Result, error) {
			if faulted(f) == "429@0" {
				return Result{Stdout: lines(hello, bud, retry,
					`{"type":"protocol_error","message":"line 2: user refused: a turn is already in flight"}`,
					tok, msg, done("stop"))}, nil
			}
			return good(nil, f)
		}, "429@0", "turns: the user command on stdin line 2 got no turn"},
		{"a wrong exit code", func(_ context.Context, f *cassette.File) (Result, error) {
			r, _ := good(nil, f)
			r.Exit = 1
			return r, nil
		}, "", "exit: code 1, but the last turn ended stop (want 0)"},
		{"a nondeterministic replay", func() Replayer {
			n := 0
			return func(_ context.Context, f *cassette.File) (Result, error) {
				if faulted(f) == "529@0" {
					n++
					if n == 2 {
						return Result{Stdout: lines(hello, bud, done("stop"), bud, done("stop"))}, nil
					}
				}
				return good(nil, f)
			}
		}(), "529@0", "nondeterministic: replay 2 differs from replay 1: stdout line 3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep, err := Run(context.Background(), []Cassette{{Name: "c.yaml", File: twoTurns()}}, tt.replay, Options{Repeat: 2, Parallel: 1})
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, r := range rep.Rows {
				hit := strings.Contains(strings.Join(r.Failures, "; "), tt.want)
				switch {
				case tt.variant == "" && !hit:
					t.Errorf("row %s does not fail with %q: %v", r.Variant, tt.want, r.Failures)
				case r.Variant == tt.variant && !hit:
					t.Errorf("row %s does not fail with %q: %v", r.Variant, tt.want, r.Failures)
				case tt.variant != "" && r.Variant != tt.variant && !r.OK():
					t.Errorf("row %s fails too: %v", r.Variant, r.Failures)
				}
				found = found || r.Variant == tt.variant
			}
			if tt.variant != "" && !found {
				t.Fatalf("no row %s", tt.variant)
			}
			if rep.Failed == 0 {
				t.Error("the report counts no failure")
			}
		})
	}
}

// A clean replayer passes every variant, the unmodified one first.
func TestGoodReplayerPasses(t *testing.T) {
	rep, err := Run(context.Background(), []Cassette{{Name: "c.yaml", File: twoTurns()}}, good, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Failed != 0 {
		var b bytes.Buffer
		rep.WriteTable(&b)
		t.Fatalf("%d failed:\n%s", rep.Failed, b.String())
	}
	if want := 1 + len(Enumerate(twoTurns(), Kinds)); len(rep.Rows) != want {
		t.Errorf("%d rows, want %d", len(rep.Rows), want)
	}
	if rep.Rows[0].Variant != None {
		t.Errorf("first row %s, want the unmodified replay", rep.Rows[0].Variant)
	}
}

// A replay that never returns fails its row as a hang when the deadline
// passes, and the sweep goes on. The deadline here is a channel the test
// fires, not a wait.
func TestHangIsAFailedRow(t *testing.T) {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	hung := make(chan struct{})
	replay := func(_ context.Context, f *cassette.File) (Result, error) {
		if faulted(f) == "reset@1:byte=0" {
			close(hung)
			<-release // ignores its context: the worst case
		}
		return good(nil, f)
	}
	o := Options{Parallel: 3, Deadline: time.Hour}
	o.after = func(_, v string, d time.Duration) (<-chan time.Time, func()) {
		if d != time.Hour {
			t.Errorf("deadline %v, want the configured hour", d)
		}
		if v != "reset@1:byte=0" {
			return nil, func() {} // never fires
		}
		fire := make(chan time.Time)
		go func() { <-hung; close(fire) }()
		return fire, func() {}
	}
	rep, err := Run(context.Background(), []Cassette{{Name: "c.yaml", File: twoTurns()}}, replay, o)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rep.Rows {
		switch {
		case r.Variant == "reset@1:byte=0":
			if len(r.Failures) != 1 || r.Failures[0] != "hang: no result within the 1h0m0s deadline" {
				t.Errorf("hung row failures %q", r.Failures)
			}
		case !r.OK():
			t.Errorf("row %s fails: %v", r.Variant, r.Failures)
		}
	}
	if rep.Failed != 1 {
		t.Errorf("%d failed, want 1", rep.Failed)
	}
}

// The table is the same bytes whatever the parallelism and however the
// replays interleave, and however the cassettes' enumerations (several
// cassettes of different sizes, enumerated on the pool) interleave.
func TestDeterministic(t *testing.T) {
	cs := []Cassette{{Name: "a.yaml", File: twoTurns()}, {Name: "b.yaml", File: testFile(sse("data: 1\n\n", "data: [DONE]\n\n"))},
		{Name: "c.yaml", File: testFile(sse("data: 1\n\n", "data: 2\n\n", "data: 3\n\n", "data: [DONE]\n\n"))},
		{Name: "d.yaml", File: twoTurns()}}
	replay := func(_ context.Context, f *cassette.File) (Result, error) {
		if len(f.Session.Commands) == 1 {
			return Result{Stdout: lines(hello, bud, tok, msg, done("stop"))}, nil
		}
		if strings.HasPrefix(faulted(f), "5") {
			return Result{Stdout: lines(hello, bud, tok, msg, done("stop"))}, nil // a failing row
		}
		return good(nil, f)
	}
	var first []byte
	for _, par := range []int{1, 2, 8, 1, 8} {
		rep, err := Run(context.Background(), cs, replay, Options{Parallel: par})
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if err := rep.WriteTable(&b); err != nil {
			t.Fatal(err)
		}
		if err := rep.WriteJSON(&b); err != nil {
			t.Fatal(err)
		}
		if first == nil {
			first = b.Bytes()
			if rep.Failed == 0 {
				t.Fatal("want some failed rows in the table")
			}
			continue
		}
		if !bytes.Equal(b.Bytes(), first) {
			t.Fatalf("parallel %d printed other bytes:\n%s\nthan:\n%s", par, b.Bytes(), first)
		}
	}
}

// A sweep stopped by its context says so instead of reporting.
func TestCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	replay := func(ctx context.Context, f *cassette.File) (Result, error) {
		cancel()
		<-ctx.Done()
		return Result{}, ctx.Err()
	}
	if _, err := Run(ctx, []Cassette{{Name: "c.yaml", File: twoTurns()}}, replay, Options{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

// A sweep whose context is done before it starts replays nothing and
// says so.
func TestCancelledBeforeStart(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	replay := func(context.Context, *cassette.File) (Result, error) {
		t.Error("a replay ran")
		return Result{}, nil
	}
	cs := []Cassette{{Name: "a.yaml", File: twoTurns()}, {Name: "b.yaml", File: twoTurns()}}
	if _, err := Run(ctx, cs, replay, Options{Parallel: 2}); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

func ExampleReport_WriteTable() {
	f := testFile(sse("data: {\"content\":\"hi\"}\n\n", "data: [DONE]\n\n"))
	replay := func(_ context.Context, f *cassette.File) (Result, error) {
		switch op := faulted(f); {
		case op == "":
			return Result{Stdout: lines(hello, bud, tok, msg, done("stop"))}, nil
		case strings.HasPrefix(op, "429@0:retry-after=120"):
			return Result{Stdout: lines(hello, bud, `{"session_id":"s1","type":"error","message":"wait too long"}`, done("error")), Exit: 1}, nil
		case strings.HasPrefix(op, "429"):
			return Result{Stdout: lines(hello, bud, retry, tok, msg, done("stop"))}, nil
		}
		return Result{Stdout: lines(hello, bud, tok, msg, done("stop"), done("stop"))}, nil // a bug
	}
	kinds := []Kind{Kinds[0], Kinds[2], Kinds[8]} // 429, 429 retry-after=120, truncate
	rep, _ := Run(context.Background(), []Cassette{{Name: "hi.yaml", File: f}}, replay, Options{Kinds: kinds})
	rep.WriteTable(os.Stdout)
	// Output:
	// CASSETTE  VARIANT                STOP       RETRIES  VERDICT
	// hi.yaml   none                   stop             0  ok
	// hi.yaml   429@0                  stop             1  ok
	// hi.yaml   429@0:retry-after=120  error            0  ok
	// hi.yaml   truncate@0:chunk=0     stop,stop        0  FAIL check: line 6: done: done with no turn open (a duplicated done, or a turn that never opened with budget)
	// hi.yaml   truncate@0:chunk=1     stop,stop        0  FAIL check: line 6: done: done with no turn open (a duplicated done, or a turn that never opened with budget)
	// 5 variant(s) over 1 cassette(s), 2 failed
}

// OnReplay sees every judged row once, with the cassette that was
// replayed (its fault in it) and the replay's stdout, from the sweep's
// goroutines.
func TestOnReplaySeesEveryRow(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]string{} // variant → the op injected into what was replayed
	stdout := map[string]int{}
	rep, err := Run(context.Background(), []Cassette{{Name: "c.yaml", File: twoTurns()}}, good, Options{
		Parallel: 4,
		OnReplay: func(row Row, f *cassette.File, res Result) {
			mu.Lock()
			defer mu.Unlock()
			if _, dup := seen[row.Variant]; dup {
				t.Errorf("%s reported twice", row.Variant)
			}
			seen[row.Variant] = faulted(f)
			stdout[row.Variant] = len(res.Stdout)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) != len(rep.Rows) {
		t.Fatalf("OnReplay saw %d rows, the report has %d", len(seen), len(rep.Rows))
	}
	for _, r := range rep.Rows {
		want := r.Variant
		if want == None {
			want = ""
		}
		if got := seen[r.Variant]; got != want {
			t.Errorf("%s: OnReplay got a cassette with %q injected", r.Variant, got)
		}
		if stdout[r.Variant] == 0 {
			t.Errorf("%s: OnReplay got no stdout", r.Variant)
		}
	}
}
