package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/openmax/openmax/core/wire"
	"github.com/openmax/openmax/internal/citest"
	"github.com/openmax/openmax/provider/clock"
)

// hookProject makes a project whose hook file is conf, with {{HOOKPROG}}
// standing for the test hook program.
func hookProject(t *testing.T, conf string) string {
	t.Helper()
	project := t.TempDir()
	if err := os.MkdirAll(filepath.Join(project, ".openmax"), 0o755); err != nil {
		t.Fatal(err)
	}
	conf = strings.ReplaceAll(conf, "{{HOOKPROG}}", hookProgram(t))
	if err := os.WriteFile(filepath.Join(project, ".openmax", "hooks.json"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	return project
}

// nineReplies is a scenario with more completions than a turn_end hook
// may refuse.
const nineReplies = `replies:
  - text: "Done 1."
  - text: "Done 2."
  - text: "Done 3."
  - text: "Done 4."
  - text: "Done 5."
  - text: "Done 6."
  - text: "Done 7."
  - text: "Done 8."
  - text: "Done 9."
`

// TestPromptExitsFourWhenUnverified: under -p, a turn_end hook refusing
// every completion ends the turn unverified after eight continuations and
// openmax exits 4; each refusal is on stderr, each completion on stdout.
func TestPromptExitsFourWhenUnverified(t *testing.T) {
	project := hookProject(t, `{"hooks": [{"name": "verify", "event": "turn_end", "lifecycle": "persistent", "command": "{{HOOKPROG}}", "args": ["refuse", "not verified"]}]}`)
	sc := filepath.Join(t.TempDir(), "s.yaml")
	if err := os.WriteFile(sc, []byte(nineReplies), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out, errb bytes.Buffer
	code := run(ctx, []string{"-p", "fix it", "--provider", "script", "--script", sc, "--project", project},
		strings.NewReader(""), &out, &errb, env{clock: clock.Real{}, getenv: trustedEnv(t, testEnv, project)})
	if code != 4 {
		t.Fatalf("exit %d, want 4\nstdout:\n%s\nstderr:\n%s", code, out.String(), errb.String())
	}
	if n := strings.Count(out.String(), "Done "); n != 9 {
		t.Errorf("%d completions on stdout, want 9:\n%s", n, out.String())
	}
	if n := strings.Count(errb.String(), "openmax: hook verify refused the reply"); n != 8 {
		t.Errorf("%d refusals on stderr, want 8:\n%s", n, errb.String())
	}
	if !strings.HasSuffix(errb.String(), "openmax: the turn ended unverified\n") {
		t.Errorf("stderr does not end saying the turn ended unverified:\n%s", errb.String())
	}
}

// TestPromptBlocked: under -p a refused prompt prints nothing on stdout,
// says so on stderr, and exits 0 (blocked is not one of -p's exit-4 stops).
func TestPromptBlocked(t *testing.T) {
	project := hookProject(t, `{"hooks": [{"name": "guard", "event": "user_prompt_submit", "command": "{{HOOKPROG}}", "args": ["refuse", "not today"]}]}`)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out, errb bytes.Buffer
	code := run(ctx, []string{"-p", "hello", "--provider", "echo", "--project", project},
		strings.NewReader(""), &out, &errb, env{clock: clock.Real{}, getenv: trustedEnv(t, testEnv, project)})
	if code != 0 || out.Len() != 0 || !strings.Contains(errb.String(), `blocked by hook "guard" and was not sent: not today`) {
		t.Errorf("exit %d, stdout %q, stderr:\n%s", code, out.String(), errb.String())
	}
}

// TestHookRefusalThatCannotBePersistedIsUnverified runs the real binary
// with a file size limit (prlimit) that the session file reaches with the
// refusal's long reason: the refusal cannot be written to disk, so no
// turn_refused goes out and the turn ends unverified, its reply standing;
// the session on disk holds no trace of the refusal.
func TestHookRefusalThatCannotBePersistedIsUnverified(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary; skipped in -short mode")
	}
	prlimit, err := exec.LookPath("prlimit")
	if err != nil {
		citest.SkipOutsideCI(t, fmt.Sprintf("needs prlimit (util-linux) to limit the session file's size: %v", err))
	}
	bin := buildBinary(t)
	reason := "verify first: " + strings.Repeat("r", 64<<10)
	project := hookProject(t, `{"hooks": [{"name": "verify", "event": "turn_end", "command": "{{HOOKPROG}}", "args": ["refuse", "`+reason+`"]}]}`)
	sc := filepath.Join(t.TempDir(), "s.yaml")
	if err := os.WriteFile(sc, []byte(nineReplies), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	state := t.TempDir()
	cmdEnv := trustedBinaryEnv(t, ctx, bin, project, state)
	cmd := exec.CommandContext(ctx, prlimit, "--fsize=16384", "--", bin, "--stdio", "--provider", "script", "--script", sc, "--project", project, "--session-id", "s1")
	cmd.Env = cmdEnv
	out, stderr := outputOf(t, cmd, `{"cmd":"user","text":"fix it"}`+"\n")
	var types []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		o := rpLine(t, l)
		types = append(types, o)
	}
	if got, want := strings.Join(types, " "), "hello budget token message_done done:unverified"; got != want {
		t.Errorf("stdout %s, want %s\n%s\nstderr:\n%s", got, want, out, stderr.String())
	}
	if _, err := wire.CheckStreamStrict(bytes.NewReader(out), func(v wire.Verdict) {
		if v.Err != nil {
			t.Errorf("checker: line %d: %v", v.Line, v.Err)
		}
	}); err != nil {
		t.Fatal(err)
	}
	// The session file holds the reply, and nothing of the refusal.
	saved := false
	err = filepath.Walk(state, func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err == nil && bytes.Contains(data, []byte("verify first")) {
			t.Errorf("%s holds the refusal that was reported as not persisted", p)
		}
		saved = saved || bytes.Contains(data, []byte("Done 1."))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if !saved {
		t.Errorf("no session file under %s holds the reply: the session was not saved, so nothing was tested", state)
	}
}

// outputOf runs cmd with stdin and returns its stdout and stderr; it
// fails the test when cmd does not exit 0.
func outputOf(t *testing.T, cmd *exec.Cmd, stdin string) ([]byte, *bytes.Buffer) {
	t.Helper()
	cmd.Stdin = strings.NewReader(stdin)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v\n%s", cmd.Path, err, stderr.String())
	}
	return out, &stderr
}

// rpLine is a stdout line's type, with the stop_reason for done.
func rpLine(t *testing.T, line string) string {
	t.Helper()
	var l struct {
		Type       string `json:"type"`
		StopReason string `json:"stop_reason"`
	}
	if err := json.Unmarshal([]byte(line), &l); err != nil {
		t.Fatalf("not a JSON line: %q", line)
	}
	if l.Type == "done" {
		return "done:" + l.StopReason
	}
	return l.Type
}

// onDiskWatcher is stdout: when a turn_refused line is written, the
// refusal's reason must already be in a session file under state.
type onDiskWatcher struct {
	t       *testing.T
	state   string
	buf     bytes.Buffer
	checked int
}

func (w *onDiskWatcher) Write(p []byte) (int, error) {
	for _, l := range bytes.SplitAfter(p, []byte("\n")) {
		var ev struct{ Type, Reason string }
		if json.Unmarshal(bytes.TrimSpace(l), &ev) == nil && ev.Type == "turn_refused" {
			w.checked++
			if !treeContains(w.state, ev.Reason) {
				w.t.Errorf("turn_refused (%s) went out before its reason was in the session file", ev.Reason)
			}
		}
	}
	return w.buf.Write(p)
}

func treeContains(dir, s string) bool {
	found := false
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			data, _ := os.ReadFile(p)
			found = found || bytes.Contains(data, []byte(s))
		}
		return nil
	})
	return found
}

// TestTurnRefusedReasonIsOnDiskFirst: over a saved session, each refusal's
// reason is in the session file when its turn_refused line is written.
func TestTurnRefusedReasonIsOnDiskFirst(t *testing.T) {
	project := hookProject(t, `{"hooks": [{"name": "verify", "event": "turn_end", "command": "{{HOOKPROG}}", "args": ["refuse", "check the edge case"]}]}`)
	sc := filepath.Join(t.TempDir(), "s.yaml")
	if err := os.WriteFile(sc, []byte(nineReplies), 0o644); err != nil {
		t.Fatal(err)
	}
	state := t.TempDir()
	getenv := trustedEnv(t, func(k string) string {
		if k == "XDG_STATE_HOME" {
			return state
		}
		return testEnv(k)
	}, project)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	w := &onDiskWatcher{t: t, state: state}
	var errb bytes.Buffer
	code := run(ctx, []string{"--stdio", "--provider", "script", "--script", sc, "--project", project},
		strings.NewReader(`{"cmd":"user","text":"fix it"}`+"\n"), w, &errb, env{clock: clock.Real{}, getenv: getenv})
	if code != 0 || w.checked != 8 || !strings.Contains(w.buf.String(), `"stop_reason":"unverified"`) {
		t.Errorf("exit %d, %d turn_refused checked (want 8)\n%s\n%s", code, w.checked, w.buf.String(), errb.String())
	}
}

// TestOneShotHookWithALingeringChild is issue 21's point 5 through the real
// binary: a process-per-event hook that leaves a background child holding
// its stdout (as `sleep 100 &` in a script does). Once the hook process
// has exited, its answer decides (a refusal is honored, not timed out and
// failed open) and the child is killed; a hook that exits without an
// answer fails at once; one that never exits still times out. The
// lingering child is gone in every case.
func TestOneShotHookWithALingeringChild(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary; skipped in -short mode")
	}
	bin := buildBinary(t)
	tests := []struct {
		name    string
		event   string
		timeout string
		mode    []string // the hook's mode after its child started
		stop    string   // the turn's stop_reason
		failed  string   // what hook_failed's detail says; "" for none
	}{
		{"refuses and exits", "user_prompt_submit", "10s", []string{"refuse", "not with a child around"}, "blocked", ""},
		{"allows and exits", "user_prompt_submit", "10s", []string{"allow"}, "stop", ""},
		{"observes and exits", "turn_start", "10s", []string{"allow"}, "stop", ""},
		{"exits without answering", "user_prompt_submit", "10s", []string{"silent"}, "stop", "exited without a response"},
		{"never exits", "user_prompt_submit", "1s", []string{"hang"}, "stop", "timed out after 1s"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pidFile := filepath.Join(t.TempDir(), "child.pid")
			args, err := json.Marshal(append([]string{"linger", pidFile}, tc.mode...))
			if err != nil {
				t.Fatal(err)
			}
			project := hookProject(t, `{"hooks": [{"name": "lingers", "event": "`+tc.event+`", "command": "{{HOOKPROG}}", "args": `+string(args)+`, "timeout": "`+tc.timeout+`"}]}`)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin, "--stdio", "--provider", "echo", "--project", project)
			cmd.Env = trustedBinaryEnv(t, ctx, bin, project, "")
			out, _ := outputOf(t, cmd, `{"cmd":"user","text":"hi"}`+"\n")
			var failed []string
			stop := ""
			for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
				var ev struct {
					Type       string
					Detail     string
					StopReason string `json:"stop_reason"`
				}
				if err := json.Unmarshal([]byte(l), &ev); err != nil {
					t.Fatalf("stdout line %q: %v", l, err)
				}
				switch ev.Type {
				case "hook_failed":
					failed = append(failed, ev.Detail)
				case "done":
					stop = ev.StopReason
				}
			}
			if stop != tc.stop {
				t.Errorf("done %q, want %q\n%s", stop, tc.stop, out)
			}
			switch {
			case tc.failed == "" && len(failed) > 0:
				t.Errorf("hook_failed %q, want none", failed)
			case tc.failed != "" && (len(failed) != 1 || !strings.Contains(failed[0], tc.failed)):
				t.Errorf("hook_failed %q, want one saying %q", failed, tc.failed)
			}
			if tc.stop == "blocked" && !strings.Contains(string(out), "not with a child around") {
				t.Errorf("the refusal's reason is not on the wire:\n%s", out)
			}
			data, err := os.ReadFile(pidFile)
			if err != nil {
				t.Fatalf("the hook never started its child: %v", err)
			}
			pid, err := strconv.Atoi(string(data))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
			if !gone(pid) {
				t.Errorf("the hook's lingering child %d is still running", pid)
			}
		})
	}
}
