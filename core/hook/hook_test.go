//go:build linux

package hook

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/openmax/openmax/core"
	"github.com/openmax/openmax/internal/citest"
)

// prog is the test hook, built from testdata/hookprog.
var prog string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "hookprog")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	prog = filepath.Join(dir, "hookprog")
	build := exec.Command("go", "build", "-o", prog, "./testdata/hookprog")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building the test hook:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

var lifecycles = []string{PerEvent, Persistent}

// testHook is a hook running hookprog with args.
func testHook(t *testing.T, name string, event core.HookEvent, lifecycle string, args ...string) *Hook {
	mode := ModeObserve
	if event.Intercept() {
		mode = ModeIntercept
	}
	return &Hook{Name: name, Event: event, Mode: mode, Command: prog, Args: args, Lifecycle: lifecycle,
		Timeout: 20 * time.Second, Dir: t.TempDir()}
}

func newSet(t *testing.T, opts Options, hooks ...*Hook) *Set {
	s := New(hooks, opts)
	t.Cleanup(func() { s.Close() })
	return s
}

var prompt = core.PromptPayload{SessionID: "s1", Prompt: "hi"}

// want is the outcome of one Intercept.
type want struct {
	refused bool
	reason  string
	fail    string // a substring of the one failure; "" for none
}

func expect(t *testing.T, v core.HookVerdict, fs []core.HookFailure, w want, hook string) {
	t.Helper()
	if v.Refused != w.refused || v.Reason != w.reason || (w.refused && v.Hook != hook) {
		t.Errorf("verdict %+v, want refused=%v reason=%q hook=%s", v, w.refused, w.reason, hook)
	}
	switch {
	case w.fail == "" && len(fs) != 0:
		t.Errorf("failures %+v, want none", fs)
	case w.fail != "" && len(fs) != 1:
		t.Errorf("failures %+v, want one with %q", fs, w.fail)
	case w.fail != "":
		f := fs[0]
		if !strings.Contains(f.Detail, w.fail) || f.Hook != hook || f.Event == "" {
			t.Errorf("failure %+v, want hook %s and detail with %q", f, hook, w.fail)
		}
	}
}

func TestIntercept(t *testing.T) {
	rows := []struct {
		name    string
		args    []string
		timeout time.Duration
		want    map[string]want // by lifecycle
	}{
		{"allow", []string{"answer", "allow"}, 0, map[string]want{
			PerEvent: {}, Persistent: {}}},
		{"refuse", []string{"answer", "refuse", "tests are failing"}, 0, map[string]want{
			PerEvent:   {refused: true, reason: "tests are failing"},
			Persistent: {refused: true, reason: "tests are failing"}}},
		{"refusal without reason", []string{"answer", "refuse", ""}, 0, map[string]want{
			PerEvent:   {fail: "a refusal without a reason"},
			Persistent: {fail: "a refusal without a reason"}}},
		{"unknown decision", []string{"answer", "maybe"}, 0, map[string]want{
			PerEvent:   {fail: `decision "maybe"`},
			Persistent: {fail: `decision "maybe"`}}},
		{"banner on stdout", []string{"banner"}, 0, map[string]want{
			// one process, one message: the banner is taken for the response
			PerEvent: {fail: "malformed output"},
			// correlated by id: the banner is reported and the answer stands
			Persistent: {fail: `malformed output: not a JSON-RPC object: "hookprog 1.0 ready"`}}},
		{"crash", []string{"crash"}, 0, map[string]want{
			PerEvent:   {fail: "exited with status 2; stderr: boom: the hook crashed"},
			Persistent: {fail: "no response: the process exited with status 2; stderr: boom: the hook crashed"}}},
		{"no response", []string{"silent"}, 300 * time.Millisecond, map[string]want{
			PerEvent:   {fail: "exited without a response"}, // EOF after its one message, then it exits 0
			Persistent: {fail: "timed out after 300ms; its process group was killed"}}},
		{"answer then nonzero exit", []string{"exit3"}, 0, map[string]want{
			// persistent: TestPersistentExitBetweenMessages
			PerEvent: {fail: "exited with status 3"}}},
		{"wrong id", []string{"wrongid"}, 0, map[string]want{
			// the first line is its one response
			PerEvent: {fail: "malformed output: more than one line written for one request"},
			// the stray response is reported, the correlated one stands
			Persistent: {refused: true, reason: "the right id", fail: "a response to no outstanding request (id 101)"}}},
		{"only a wrong id", []string{"wrongid", "once"}, 0, map[string]want{
			PerEvent: {fail: "malformed output: the response has id 101, the request 1"}}},
		{"endless line", []string{"endless"}, 0, map[string]want{
			PerEvent:   {fail: "a line longer than 1048576 bytes"},
			Persistent: {fail: "a line longer than 1048576 bytes (1 MiB); terminated after 3 malformed output lines"}}},
		{"never answers", []string{"block"}, 200 * time.Millisecond, map[string]want{
			PerEvent:   {fail: "timed out after 200ms"},
			Persistent: {fail: "timed out after 200ms"}}},
	}
	for _, r := range rows {
		for _, lc := range lifecycles {
			if _, ok := r.want[lc]; !ok {
				continue
			}
			t.Run(r.name+"/"+lc, func(t *testing.T) {
				h := testHook(t, "h1", core.HookTurnEnd, lc, r.args...)
				if r.timeout > 0 {
					h.Timeout = r.timeout
				}
				s := newSet(t, Options{}, h)
				v, fs := s.Intercept(context.Background(), core.HookTurnEnd, core.TurnEndPayload{SessionID: "s1", Text: "done"})
				expect(t, v, fs, r.want[lc], "h1")
			})
		}
	}
}

// The "silent" per-event hook reads its one message and EOF, then exits 0
// without answering: that is a missing response, not a timeout.
func TestPerEventNoResponse(t *testing.T) {
	s := newSet(t, Options{}, testHook(t, "h1", core.HookUserPromptSubmit, PerEvent, "silent"))
	v, fs := s.Intercept(context.Background(), core.HookUserPromptSubmit, prompt)
	expect(t, v, fs, want{fail: "exited without a response"}, "h1")
}

func TestPerEventTwoResponses(t *testing.T) {
	s := newSet(t, Options{}, testHook(t, "h1", core.HookUserPromptSubmit, PerEvent, "twice"))
	v, fs := s.Intercept(context.Background(), core.HookUserPromptSubmit, prompt)
	expect(t, v, fs, want{fail: "more than one line"}, "h1")
}

// A persistent hook that crashed is started again on its next use.
func TestPersistentRestartsAfterCrash(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "crashed")
	s := newSet(t, Options{}, testHook(t, "h1", core.HookUserPromptSubmit, Persistent, "crash-once", marker))
	v, fs := s.Intercept(context.Background(), core.HookUserPromptSubmit, prompt)
	expect(t, v, fs, want{fail: "exited with status 2; stderr: boom: first run"}, "h1")
	v, fs = s.Intercept(context.Background(), core.HookUserPromptSubmit, prompt)
	expect(t, v, fs, want{refused: true, reason: "second life"}, "h1")
}

// A persistent hook that exits after answering: the answer stands, the
// exit is reported, and the next use starts it again.
func TestPersistentExitBetweenMessages(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "exited")
	s := newSet(t, Options{}, testHook(t, "h1", core.HookUserPromptSubmit, Persistent, "exit3", marker))
	v1, f1 := s.Intercept(context.Background(), core.HookUserPromptSubmit, prompt)
	v2, f2 := s.Intercept(context.Background(), core.HookUserPromptSubmit, prompt)
	// The exit is told once: as an exit between messages by the first call
	// or the second (which a new process then answers), or, when the
	// second message went out while the process was exiting, as that
	// message's missing response.
	fs := append(f1, f2...)
	if v1.Refused || v2.Refused || len(fs) != 1 || !strings.Contains(fs[0].Detail, "exited with status 3") {
		t.Fatalf("got %+v %+v / %+v %+v, want one failure telling the exit", v1, f1, v2, f2)
	}
}

// Concurrent intercepts on one persistent hook are serialized (the hook
// never has a second request waiting while it answers one) and each gets
// its own answer (correlated by id).
func TestPersistentOneOutstanding(t *testing.T) {
	s := newSet(t, Options{}, testHook(t, "h1", core.HookUserPromptSubmit, Persistent, "serial"))
	const n = 6
	var wg sync.WaitGroup
	errs := make(chan string, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := fmt.Sprintf("prompt %d", i)
			v, fs := s.Intercept(context.Background(), core.HookUserPromptSubmit, core.PromptPayload{SessionID: "s1", Prompt: p})
			if !v.Refused || v.Reason != p || len(fs) != 0 {
				errs <- fmt.Sprintf("%s: verdict %+v failures %+v", p, v, fs)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

// A persistent hook writing malformed lines is terminated at the third and
// not started again.
func TestPersistentTerminatedAfterMalformed(t *testing.T) {
	s := newSet(t, Options{}, testHook(t, "h1", core.HookUserPromptSubmit, Persistent, "spew"))
	v, fs := s.Intercept(context.Background(), core.HookUserPromptSubmit, prompt)
	if v.Refused || len(fs) != 1 {
		t.Fatalf("got %+v %+v", v, fs)
	}
	for _, want := range []string{`"log line 0"`, `"log line 2"`, "terminated after 3 malformed output lines", "no response"} {
		if !strings.Contains(fs[0].Detail, want) {
			t.Errorf("detail %q lacks %q", fs[0].Detail, want)
		}
	}
	v, fs = s.Intercept(context.Background(), core.HookUserPromptSubmit, prompt)
	expect(t, v, fs, want{fail: "not run: its process was terminated after 3 malformed output lines"}, "h1")
}

// A timeout or a cancel kills the hook's whole process group: a grandchild
// holding a FIFO open dies too, which the FIFO's reader sees as EOF.
func TestKillsProcessGroup(t *testing.T) {
	for _, lc := range lifecycles {
		for _, how := range []string{"timeout", "cancel"} {
			t.Run(lc+"/"+how, func(t *testing.T) {
				t.Parallel()
				fifo := filepath.Join(t.TempDir(), "fifo")
				if err := syscall.Mkfifo(fifo, 0o600); err != nil {
					citest.SkipOutsideCI(t, "no FIFOs here: "+err.Error())
				}
				opened := make(chan struct{})
				eof := make(chan error, 1)
				go func() {
					f, err := os.Open(fifo) // returns once the grandchild opened it
					close(opened)
					if err != nil {
						eof <- err
						return
					}
					defer f.Close()
					_, err = io.Copy(io.Discard, f)
					eof <- err
				}()
				h := testHook(t, "h1", core.HookUserPromptSubmit, lc, "grandchild", fifo)
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				wantFail := "cancelled; its process group was killed"
				if how == "timeout" {
					h.Timeout = 2 * time.Second
					wantFail = "timed out after 2s; its process group was killed"
				} else {
					go func() { <-opened; cancel() }()
				}
				s := newSet(t, Options{}, h)
				v, fs := s.Intercept(ctx, core.HookUserPromptSubmit, prompt)
				expect(t, v, fs, want{fail: wantFail}, "h1")
				guard := time.NewTimer(20 * time.Second)
				defer guard.Stop()
				select {
				case err := <-eof:
					if err != nil {
						t.Fatal(err)
					}
				case <-guard.C:
					t.Fatal("the grandchild survived: the FIFO never saw EOF")
				}
			})
		}
	}
}

// Close ends a persistent hook that ignores EOF on its stdin: its group,
// grandchild included, is killed after the grace.
func TestCloseKillsPersistent(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		citest.SkipOutsideCI(t, "no FIFOs here: "+err.Error())
	}
	opened := make(chan struct{})
	eof := make(chan error, 1)
	go func() {
		f, err := os.Open(fifo)
		close(opened)
		if err != nil {
			eof <- err
			return
		}
		defer f.Close()
		_, err = io.Copy(io.Discard, f)
		eof <- err
	}()
	h := testHook(t, "h1", core.HookTurnDone, Persistent, "grandchild", fifo)
	h.Timeout = 300 * time.Millisecond // the grace of Close
	s := New([]*Hook{h}, Options{})
	if fs := s.Observe(context.Background(), core.HookTurnDone, core.TurnDonePayload{SessionID: "s1"}); len(fs) != 0 {
		t.Fatal(fs)
	}
	<-opened
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	guard := time.NewTimer(20 * time.Second)
	defer guard.Stop()
	select {
	case err := <-eof:
		if err != nil {
			t.Fatal(err)
		}
	case <-guard.C:
		t.Fatal("the hook's grandchild survived Close")
	}
	if fs := s.Observe(context.Background(), core.HookTurnDone, core.TurnDonePayload{SessionID: "s1"}); len(fs) != 1 || fs[0].Detail != "the hooks are closed" {
		t.Errorf("after Close: %+v", fs)
	}
}

// The hook's environment is the base variables and its env entries,
// literally; openmax's keys and tokens never reach it.
func TestEnvironment(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-test-openai-0123456789")
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-test-0123456789")
	t.Setenv("GITHUB_TOKEN", "ghp_test0123456789")
	t.Setenv("X", "expanded-x")
	t.Setenv("LC_TIME", "C")
	for _, lc := range lifecycles {
		t.Run(lc, func(t *testing.T) {
			dump := filepath.Join(t.TempDir(), "env")
			h := testHook(t, "h1", core.HookUserPromptSubmit, lc, "dumpenv", dump)
			h.Env = map[string]string{
				"A": "$HOME", "B": "${X}", "C": "`id`", "D": "$(id)", "E": "'quoted' \"double\" \\ ;|&",
				"LANG": "fr_FR.UTF-8", "F": "secret:ref", "G": "",
			}
			s := newSet(t, Options{}, h)
			v, fs := s.Intercept(context.Background(), core.HookUserPromptSubmit, prompt)
			expect(t, v, fs, want{}, "h1")
			data, err := os.ReadFile(dump)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for _, kv := range strings.Split(string(data), "\n") {
				k, v, _ := strings.Cut(kv, "=")
				got[k] = v
			}
			for k, v := range h.Env {
				if got[k] != v {
					t.Errorf("%s=%q, want %q literally", k, got[k], v)
				}
			}
			if got["LC_TIME"] != "C" || got["PATH"] != os.Getenv("PATH") || got["OPENMAX_AGENT_SPAWNED"] != "1" {
				t.Errorf("base variables missing: %v", got)
			}
			for k := range got {
				switch {
				case h.Env[k] != "" || k == "G", k == "PATH", k == "HOME", k == "TMPDIR", k == "OPENMAX_AGENT_SPAWNED", strings.HasPrefix(k, "LC_"):
				default:
					t.Errorf("%s reached the hook", k)
				}
			}
			for _, secret := range []string{"sk-test-openai", "sk-ant-test", "ghp_test", "expanded-x"} {
				if strings.Contains(string(data), secret) {
					t.Errorf("%s reached the hook's environment", secret)
				}
			}
		})
	}
}

// Env values never appear in a failure, a reason or a recorded exchange;
// their names may.
func TestEnvValuesRedacted(t *testing.T) {
	const secret = "hunter2-literal-value"
	for _, lc := range lifecycles {
		t.Run(lc, func(t *testing.T) {
			var recorded []Exchange
			leak := testHook(t, "leak", core.HookTurnEnd, lc, "leak", "MY_SECRET")
			leak.Env = map[string]string{"MY_SECRET": secret}
			reason := testHook(t, "reason", core.HookTurnEnd, lc, "leak-reason", "MY_SECRET")
			reason.Env = map[string]string{"MY_SECRET": secret}
			s := newSet(t, Options{OnExchange: func(e Exchange) { recorded = append(recorded, e) }}, leak, reason)
			v, fs := s.Intercept(context.Background(), core.HookTurnEnd, core.TurnEndPayload{SessionID: "s1"})
			if !v.Refused || v.Reason != "value=[env MY_SECRET]" || v.Hook != "reason" {
				t.Errorf("verdict %+v", v)
			}
			if len(fs) != 1 || fs[0].Hook != "leak" || !strings.Contains(fs[0].Detail, "[env MY_SECRET]") {
				t.Errorf("failures %+v", fs)
			}
			all, _ := json.Marshal([]any{v, fs, recorded})
			if strings.Contains(string(all), secret) || strings.Contains(string(all), "hunter2") {
				t.Errorf("the env value leaked: %s", all)
			}
			if len(recorded) != 2 {
				t.Errorf("recorded %d exchanges, want 2", len(recorded))
			}
		})
	}
}

// The request carries the documented params; openmax's own secrets in a
// payload are replaced.
func TestRequest(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-test-openai-0123456789")
	s := newSet(t, Options{}, testHook(t, "shape", core.HookUserPromptSubmit, PerEvent, "echo-params"))
	v, fs := s.Intercept(context.Background(), core.HookUserPromptSubmit,
		core.PromptPayload{SessionID: "s9", Prompt: "my key is sk-test-openai-0123456789\nsecond line"})
	if len(fs) != 0 || !v.Refused {
		t.Fatalf("%+v %+v", v, fs)
	}
	want := `{"version":"openmax.hooks/1","hook":"shape","event":"user_prompt_submit","session_id":"s9","payload":{"prompt":"my key is [redacted]\nsecond line"}}`
	if v.Reason != want {
		t.Errorf("params\n%s\nwant\n%s", v.Reason, want)
	}
}

// A message is one line of valid UTF-8 whatever the payload holds: raw
// JSON with newlines between tokens, newlines in strings, invalid bytes.
func TestMessageOneLine(t *testing.T) {
	s := newSet(t, Options{Exchanger: Recorded(nil)}, testHook(t, "h", core.HookToolStart, PerEvent))
	payload := core.ToolStartPayload{SessionID: "s1", CallID: "c1", Name: "write_file",
		Args: json.RawMessage("{\n  \"text\": \"a\\nb\xff\"\n}")}
	for _, id := range []int64{0, 7} {
		line, err := s.message(s.hooks[0], core.HookToolStart, id, payload)
		if err != nil {
			t.Fatal(err)
		}
		if strings.ContainsAny(string(line), "\n\r") || !utf8.Valid(line) || !json.Valid(line) {
			t.Errorf("not one valid UTF-8 JSON line: %q", line)
		}
		want := `"payload":{"session_id":"s1","call_id":"c1","name":"write_file","args":{"text":"a\nb�"}}}}`
		if !strings.HasSuffix(string(line), want) {
			t.Errorf("line %s\nwant suffix %s", line, want)
		}
	}
}

// Intercepts fail open: a failing hook does not refuse and the next one
// still runs; the first refusal wins and later hooks do not run.
func TestFailOpenAndOrder(t *testing.T) {
	var ran []string
	s := newSet(t, Options{OnExchange: func(e Exchange) { ran = append(ran, e.Hook) }},
		testHook(t, "broken", core.HookUserPromptSubmit, PerEvent, "crash"),
		testHook(t, "allows", core.HookUserPromptSubmit, PerEvent, "answer", "allow"),
		testHook(t, "refuses", core.HookUserPromptSubmit, PerEvent, "answer", "refuse", "no"),
		testHook(t, "never", core.HookUserPromptSubmit, PerEvent, "answer", "refuse", "late"),
		testHook(t, "other-event", core.HookTurnEnd, PerEvent, "answer", "refuse", "x"),
	)
	v, fs := s.Intercept(context.Background(), core.HookUserPromptSubmit, prompt)
	if !v.Refused || v.Reason != "no" || v.Hook != "refuses" {
		t.Errorf("verdict %+v", v)
	}
	if len(fs) != 1 || fs[0].Hook != "broken" || fs[0].Event != core.HookUserPromptSubmit || !strings.Contains(fs[0].Detail, "exited with status 2") {
		t.Errorf("failures %+v", fs)
	}
	if got := strings.Join(ran, ","); got != "broken,allows,refuses" {
		t.Errorf("ran %s", got)
	}
}

// Observe hooks get a notification (no id) and nothing they do decides
// anything; their failures are returned.
func TestObserve(t *testing.T) {
	log := filepath.Join(t.TempDir(), "log")
	s := newSet(t, Options{},
		testHook(t, "logger", core.HookToolEnd, PerEvent, "log", log),
		testHook(t, "crasher", core.HookToolEnd, PerEvent, "crash"),
		testHook(t, "chatty", core.HookToolEnd, PerEvent, "banner"),
	)
	payload := core.ToolEndPayload{SessionID: "s1", CallID: "c1", Name: "read_file", OK: true, Output: "x"}
	fs := s.Observe(context.Background(), core.HookToolEnd, payload)
	if len(fs) != 2 || fs[0].Hook != "crasher" || !strings.Contains(fs[0].Detail, "exited with status 2; stderr: boom") ||
		fs[1].Hook != "chatty" || !strings.Contains(fs[1].Detail, "malformed output") {
		t.Errorf("failures %+v", fs)
	}
	data, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	wantLine := `{"jsonrpc":"2.0","method":"hook/observe","params":{"version":"openmax.hooks/1","hook":"logger","event":"tool_end","session_id":"s1","payload":{"session_id":"s1","call_id":"c1","name":"read_file","ok":true,"output":"x"}}}` + "\n"
	if string(data) != wantLine {
		t.Errorf("notification\n%s\nwant\n%s", data, wantLine)
	}
	// Observe hooks of an intercept event are notified by Intercept.
	s2 := newSet(t, Options{}, testHook(t, "seer", core.HookUserPromptSubmit, PerEvent, "crash"))
	s2.hooks[0].Mode = ModeObserve
	v, fs := s2.Intercept(context.Background(), core.HookUserPromptSubmit, prompt)
	expect(t, v, fs, want{fail: "exited with status 2"}, "seer")
}

// A persistent observe hook receives every notification on one process.
func TestPersistentObserve(t *testing.T) {
	log := filepath.Join(t.TempDir(), "log")
	s := newSet(t, Options{}, testHook(t, "logger", core.HookTurnDone, Persistent, "log", log))
	for range 3 {
		if fs := s.Observe(context.Background(), core.HookTurnDone, core.TurnDonePayload{SessionID: "s1", StopReason: "stop"}); len(fs) != 0 {
			t.Fatal(fs)
		}
	}
	// Close ends stdin first; the hook logs what it read, then exits at EOF.
	s.Close()
	data, _ := os.ReadFile(log)
	if n := strings.Count(string(data), `"method":"hook/observe"`); n != 3 {
		t.Errorf("%d notifications logged by one process, want 3:\n%s", n, data)
	}
}

// A recorded session answers without the hook: the same verdicts and
// failures, from Recorded.
func TestRecordedReplays(t *testing.T) {
	var recorded []Exchange
	hooks := func() []*Hook {
		return []*Hook{
			testHook(t, "broken", core.HookUserPromptSubmit, PerEvent, "wrongid"),
			testHook(t, "refuses", core.HookUserPromptSubmit, Persistent, "answer", "refuse", "=prompt"),
		}
	}
	live := newSet(t, Options{OnExchange: func(e Exchange) { recorded = append(recorded, e) }}, hooks()...)
	v1, f1 := live.Intercept(context.Background(), core.HookUserPromptSubmit, core.PromptPayload{SessionID: "s1", Prompt: "a"})
	v2, f2 := live.Intercept(context.Background(), core.HookUserPromptSubmit, core.PromptPayload{SessionID: "s1", Prompt: "b"})

	replayHooks := hooks()
	for _, h := range replayHooks {
		h.Command = "/nonexistent/hook" // nothing runs
	}
	replay := newSet(t, Options{Exchanger: Recorded(recorded)}, replayHooks...)
	r1, g1 := replay.Intercept(context.Background(), core.HookUserPromptSubmit, core.PromptPayload{SessionID: "s1", Prompt: "a"})
	r2, g2 := replay.Intercept(context.Background(), core.HookUserPromptSubmit, core.PromptPayload{SessionID: "s1", Prompt: "b"})
	live1, _ := json.Marshal([]any{v1, f1, v2, f2})
	again, _ := json.Marshal([]any{r1, g1, r2, g2})
	if string(live1) != string(again) {
		t.Errorf("replay\n%s\nlive\n%s", again, live1)
	}
	if len(f1) != 1 {
		t.Errorf("live failures %+v", f1)
	}
	// A message the recording does not have is a failure.
	_, g3 := replay.Intercept(context.Background(), core.HookUserPromptSubmit, core.PromptPayload{SessionID: "s1", Prompt: "c"})
	if len(g3) != 2 || !strings.Contains(g3[0].Detail, "replay:") {
		t.Errorf("past the recording: %+v", g3)
	}
}

func TestCommandNotFound(t *testing.T) {
	for _, lc := range lifecycles {
		h := testHook(t, "h1", core.HookUserPromptSubmit, lc)
		h.Command = "no-such-hook-command"
		s := newSet(t, Options{}, h)
		v, fs := s.Intercept(context.Background(), core.HookUserPromptSubmit, prompt)
		expect(t, v, fs, want{fail: `could not start: command "no-such-hook-command" is not in the hook's PATH`}, "h1")
	}
}

// The line reader drops an over-long line without holding it: reading a
// 64 MiB line costs a small, fixed amount of memory.
func TestLineReaderBounded(t *testing.T) {
	r := io.MultiReader(&repeat{n: 64 << 20}, strings.NewReader("\n{\"ok\":1}\n"))
	lr := newLineReader(r, MaxLine)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if _, err := lr.next(); err != errLineTooLong {
		t.Fatalf("err %v, want errLineTooLong", err)
	}
	line, err := lr.next()
	runtime.ReadMemStats(&after)
	if err != nil || string(line) != `{"ok":1}` {
		t.Fatalf("next line %q %v", line, err)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 16<<20 {
		t.Errorf("allocated %d bytes for a dropped 64 MiB line", grew)
	}
}

type repeat struct{ n int }

func (r *repeat) Read(p []byte) (int, error) {
	if r.n == 0 {
		return 0, io.EOF
	}
	n := min(len(p), r.n)
	for i := range n {
		p[i] = 'x'
	}
	r.n -= n
	return n, nil
}

// The stderr tail keeps the last bytes, says when it dropped some, and
// gives one exchange's part of a persistent hook's stderr.
func TestStderrTail(t *testing.T) {
	tl := &tail{max: 16}
	tl.Write([]byte("old line\n"))
	m := tl.mark()
	tl.Write([]byte("new\n"))
	if got := tl.since(m); got != "new" {
		t.Errorf("since mark: %q", got)
	}
	if got := tl.String(); got != "old line\nnew" {
		t.Errorf("whole: %q", got)
	}
	tl.Write([]byte(strings.Repeat("z", 20) + "\xff"))
	if got := tl.String(); got != "…"+strings.Repeat("z", 15)+"\uFFFD" {
		t.Errorf("after overflow: %q", got)
	}
	if got := tl.since(m); got != "…"+strings.Repeat("z", 15)+"\uFFFD" {
		t.Errorf("since a mark before the kept bytes: %q", got)
	}
}

// A cancelled turn runs no more hooks.
func TestCancelledRunsNothing(t *testing.T) {
	var ran []string
	s := newSet(t, Options{OnExchange: func(e Exchange) { ran = append(ran, e.Hook) }},
		testHook(t, "gate", core.HookUserPromptSubmit, PerEvent, "answer", "refuse", "no"),
		testHook(t, "seer", core.HookTurnDone, Persistent, "answer", "allow"))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	v, fs := s.Intercept(ctx, core.HookUserPromptSubmit, prompt)
	fs = append(fs, s.Observe(ctx, core.HookTurnDone, core.TurnDonePayload{SessionID: "s1"})...)
	if v.Refused || len(fs) != 0 || len(ran) != 0 {
		t.Errorf("verdict %+v failures %+v ran %v", v, fs, ran)
	}
}
