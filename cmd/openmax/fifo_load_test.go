package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The files openmax loads from places the model can write (the project's
// .openmax, the configuration and state directories) never block it: a
// FIFO, directory or device where a file belongs is refused with a stderr
// line naming it, the session goes on, and EOF still ends the process.
// Each wait below is bounded by the test's context only as a hang guard: a
// wedged openmax fails the test rather than stalling the suite.

// loadDirs are the directories of one run: the project, the configuration
// directory (XDG_CONFIG_HOME/openmax) and the project's folder in the
// state directory (found once a session has been saved).
type loadDirs struct {
	t                      *testing.T
	project, config, state string
}

// fifo makes a FIFO at path (after removing what is there).
func (d loadDirs) fifo(path string) {
	d.t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		d.t.Fatal(err)
	}
	if err := os.RemoveAll(path); err != nil {
		d.t.Fatal(err)
	}
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		d.t.Fatal(err)
	}
}

// stateDir is the one project folder under the state directory.
func (d loadDirs) stateDir() string {
	d.t.Helper()
	m, _ := filepath.Glob(filepath.Join(d.state, "openmax", "projects", "*", "project.txt"))
	if len(m) != 1 {
		d.t.Fatalf("state folders %v, want one", m)
	}
	return filepath.Dir(m[0])
}

// transcript is the one saved session's transcript.
func (d loadDirs) transcript() string {
	d.t.Helper()
	m, _ := filepath.Glob(filepath.Join(d.stateDir(), "sessions", "*.jsonl"))
	if len(m) != 1 {
		d.t.Fatalf("transcripts %v, want one", m)
	}
	return m[0]
}

const (
	toolManifest = `{"description":"lint","code":".openmax/tools/lint.sh","interpreter":["/bin/sh"]}`
	fifoKind     = "is not a regular file (it is a named pipe (FIFO))"
)

// loadSession is the real binary serving one --stdio session over pipes.
type loadSession struct {
	t      *testing.T
	ctx    context.Context
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan string
	seen   []string
	stderr bytes.Buffer // read only after exited
	exited chan struct{}
}

func startLoadSession(t *testing.T, ctx context.Context, bin string, env []string, args ...string) *loadSession {
	t.Helper()
	s := &loadSession{t: t, ctx: ctx, lines: make(chan string, 1024), exited: make(chan struct{})}
	s.cmd = exec.CommandContext(ctx, bin, args...)
	s.cmd.Env = env
	s.cmd.Stderr = &s.stderr
	s.stdin, _ = s.cmd.StdinPipe()
	stdout, _ := s.cmd.StdoutPipe()
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.cmd.Process.Kill(); <-s.exited })
	go func() {
		r := bufio.NewReaderSize(stdout, 1<<20)
		for {
			line, err := r.ReadString('\n')
			if line != "" {
				s.lines <- strings.TrimSuffix(line, "\n")
			}
			if err != nil {
				close(s.lines)
				_ = s.cmd.Wait()
				close(s.exited)
				return
			}
		}
	}()
	return s
}

// waitFor reads stdout up to a line of type typ and returns it decoded; a
// hang (the test's deadline) or the end of stdout fails the test.
func (s *loadSession) waitFor(typ string) map[string]any {
	s.t.Helper()
	for {
		select {
		case l, ok := <-s.lines:
			if !ok {
				<-s.exited
				s.t.Fatalf("stdout ended before a %s line; stderr:\n%s", typ, s.stderr.String())
			}
			s.seen = append(s.seen, l)
			var m map[string]any
			if err := json.Unmarshal([]byte(l), &m); err != nil {
				s.t.Fatalf("stdout line %q: %v", l, err)
			}
			if m["type"] == typ {
				return m
			}
		case <-s.ctx.Done():
			s.t.Fatalf("openmax hung waiting for a %s line; last lines:\n%s", typ, tail(s.seen, 5))
		}
	}
}

func (s *loadSession) send(line string) {
	s.t.Helper()
	if _, err := io.WriteString(s.stdin, line+"\n"); err != nil {
		s.t.Fatalf("send %s: %v", line, err)
	}
}

// eof closes stdin and waits for the process to exit, returning its exit
// code and stderr.
func (s *loadSession) eof() (int, string) {
	s.t.Helper()
	s.stdin.Close()
	return s.exit()
}

// exit waits for the process to exit (stdin left open), returning its exit
// code and stderr.
func (s *loadSession) exit() (int, string) {
	s.t.Helper()
	for {
		select {
		case l, ok := <-s.lines:
			if ok {
				s.seen = append(s.seen, l)
				continue
			}
			<-s.exited
			return s.cmd.ProcessState.ExitCode(), s.stderr.String()
		case <-s.ctx.Done():
			s.t.Fatalf("openmax did not exit; last lines:\n%s", tail(s.seen, 5))
		}
	}
}

// wire is every stdout line so far.
func (s *loadSession) wire() string { return strings.Join(s.seen, "\n") }

// TestNonRegularFilesNeverBlockALoad: for each file openmax loads from a
// place the model can write, a FIFO in its place (or a directory where it
// belongs) at start: openmax still says hello, answers a turn and a
// reload, names the path on stderr (and on the wire where the wire has a
// place: hook_failed for a hook file), and exits at EOF. A --continue
// whose saved transcript is a FIFO is refused before the handshake, as a
// session that cannot be read is. Before the fix each of these hung in
// open(2) before hello, for good (EOF and SIGTERM went unheard).
func TestNonRegularFilesNeverBlockALoad(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary; skipped in -short mode")
	}
	cases := []struct {
		name  string
		prior bool // a session is saved first (the state files exist)
		args  []string
		place func(d loadDirs)
		// stderr are what openmax's stderr must say; wire, what a stdout
		// line must (when set).
		stderr []string
		wire   string
		// refused: openmax exits nonzero before hello (a --continue that
		// cannot read its session).
		refused bool
	}{
		{name: "tool code", place: func(d loadDirs) {
			writeFile(t, filepath.Join(d.project, ".openmax/tools/lint.json"), toolManifest)
			d.fifo(filepath.Join(d.project, ".openmax/tools/lint.sh"))
		}, stderr: []string{"external tool .openmax/tools/lint.json: code: .openmax/tools/lint.sh " + fifoKind}},
		{name: "tool code through a symlink", place: func(d loadDirs) {
			writeFile(t, filepath.Join(d.project, ".openmax/tools/lint.json"), toolManifest)
			d.fifo(filepath.Join(d.project, "pipe"))
			if err := os.Symlink("../../pipe", filepath.Join(d.project, ".openmax/tools/lint.sh")); err != nil {
				t.Fatal(err)
			}
		}, stderr: []string{".openmax/tools/lint.sh " + fifoKind}},
		{name: "tool code a directory", place: func(d loadDirs) {
			writeFile(t, filepath.Join(d.project, ".openmax/tools/lint.json"), toolManifest)
			if err := os.MkdirAll(filepath.Join(d.project, ".openmax/tools/lint.sh"), 0o755); err != nil {
				t.Fatal(err)
			}
		}, stderr: []string{".openmax/tools/lint.sh is a directory, not a regular file"}},
		{name: "tool manifest", place: func(d loadDirs) {
			d.fifo(filepath.Join(d.project, ".openmax/tools/lint.json"))
		}, stderr: []string{".openmax/tools/lint.json " + fifoKind}},
		{name: "tools directory", place: func(d loadDirs) {
			d.fifo(filepath.Join(d.project, ".openmax/tools"))
		}, stderr: []string{"/.openmax/tools is not a directory (it is a named pipe (FIFO))"}},
		{name: "skill", place: func(d loadDirs) {
			d.fifo(filepath.Join(d.project, ".openmax/skills/review.md"))
		}, stderr: []string{".openmax/skills/review.md: not a regular file (it is a named pipe (FIFO))"}},
		{name: "skills directory", place: func(d loadDirs) {
			d.fifo(filepath.Join(d.project, ".openmax/skills"))
		}, stderr: []string{"/.openmax/skills is not a directory (it is a named pipe (FIFO))"}},
		{name: "system prompt", place: func(d loadDirs) {
			d.fifo(filepath.Join(d.project, ".openmax/system.md"))
		}, stderr: []string{".openmax/system.md: not a regular file (it is a named pipe (FIFO))"}},
		{name: "project policy", place: func(d loadDirs) {
			d.fifo(filepath.Join(d.project, ".openmax/policy.json"))
		}, stderr: []string{"/.openmax/policy.json " + fifoKind, "every tool call is refused"}},
		{name: "user policy", place: func(d loadDirs) {
			d.fifo(filepath.Join(d.config, "policy.json"))
		}, stderr: []string{"openmax/policy.json " + fifoKind}},
		{name: "project hooks", place: func(d loadDirs) {
			d.fifo(filepath.Join(d.project, ".openmax/hooks.json"))
		}, stderr: []string{"/.openmax/hooks.json " + fifoKind}, wire: `"type":"hook_failed"`},
		{name: "user hooks", place: func(d loadDirs) {
			d.fifo(filepath.Join(d.config, "hooks.json"))
		}, stderr: []string{"openmax/hooks.json " + fifoKind}, wire: `"type":"hook_failed"`},
		{name: "approved sources", place: func(d loadDirs) {
			d.fifo(filepath.Join(d.config, "sources.json"))
		}, stderr: []string{"openmax/sources.json " + fifoKind}},
		{name: "projects settings", place: func(d loadDirs) {
			d.fifo(filepath.Join(d.config, "projects.json"))
		}, stderr: []string{"openmax/projects.json " + fifoKind}},
		{name: "state project file", prior: true, place: func(d loadDirs) {
			d.fifo(filepath.Join(d.stateDir(), "project.txt"))
		}, stderr: []string{"project.txt " + fifoKind, "not saved"}},
		{name: "state next index", prior: true, place: func(d loadDirs) {
			d.fifo(filepath.Join(d.stateDir(), "index.next.json"))
		}, stderr: []string{"index.next.json " + fifoKind}},
		{name: "session state file", prior: true, args: []string{"--continue"}, place: func(d loadDirs) {
			d.fifo(strings.TrimSuffix(d.transcript(), ".jsonl") + ".state.json")
		}, stderr: []string{".state.json " + fifoKind}},
		{name: "saved transcript", prior: true, args: []string{"--continue"}, place: func(d loadDirs) {
			d.fifo(d.transcript())
		}, stderr: []string{".jsonl " + fifoKind}, refused: true},
	}
	bin := buildBinary(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			project, err := filepath.EvalSymlinks(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			d := loadDirs{t: t, project: project, state: t.TempDir()}
			env := trustedBinaryEnv(t, ctx, bin, project, d.state)
			d.config = filepath.Join(envValue(env, "XDG_CONFIG_HOME"), "openmax")
			sc := filepath.Join(t.TempDir(), "s.yaml")
			writeFile(t, sc, "replies:\n  - text: one\n  - text: two\n")
			args := []string{"--stdio", "--provider", "script", "--script", sc, "--project", project}
			if tc.prior {
				s := startLoadSession(t, ctx, bin, env, args...)
				s.waitFor("hello")
				s.send(`{"cmd":"user","text":"first"}`)
				s.waitFor("done")
				if code, stderr := s.eof(); code != 0 {
					t.Fatalf("the first session: exit %d: %s", code, stderr)
				}
			}
			tc.place(d)

			s := startLoadSession(t, ctx, bin, env, append(args, tc.args...)...)
			if tc.refused {
				code, stderr := s.eof()
				if code == 0 || len(s.seen) != 0 {
					t.Errorf("exit %d with stdout %q, want a nonzero exit before hello", code, s.seen)
				}
				checkStderr(t, stderr, tc.stderr)
				return
			}
			s.waitFor("hello")
			s.send(`{"cmd":"user","text":"hi"}`)
			if done := s.waitFor("done"); done["stop_reason"] == "error" {
				t.Errorf("done %v", done)
			}
			s.send(`{"cmd":"reload"}`)
			s.waitFor("refrozen")
			code, stderr := s.eof()
			if code != 0 {
				t.Errorf("exit %d", code)
			}
			checkStderr(t, stderr, tc.stderr)
			if tc.wire != "" && !strings.Contains(s.wire(), tc.wire) {
				t.Errorf("stdout lacks %s:\n%s", tc.wire, s.wire())
			}
		})
	}
}

func checkStderr(t *testing.T, stderr string, want []string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(stderr, w) {
			t.Errorf("stderr lacks %q:\n%s", w, stderr)
		}
	}
}

// TestNonRegularFilesBetweenTurnsNeverBlockReload: a session starts with
// a working tool, skill, system file and policy; between turns the model
// (or anyone) puts a FIFO or a directory in one's place; reload answers
// refrozen naming the file and what it is in its changes (not loaded:),
// stderr says so too, the next turn is answered and EOF ends the process.
// Before the fix the reload read the FIFO and never answered.
func TestNonRegularFilesBetweenTurnsNeverBlockReload(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary; skipped in -short mode")
	}
	cases := []struct {
		name  string
		place func(d loadDirs)
		// change is what one of refrozen's changes, "not loaded: ...",
		// must say (and stderr too).
		change string
	}{
		{"tool code", func(d loadDirs) { d.fifo(filepath.Join(d.project, ".openmax/tools/lint.sh")) },
			"external tool .openmax/tools/lint.json: code: .openmax/tools/lint.sh " + fifoKind},
		{"tool code a directory", func(d loadDirs) {
			if err := os.Remove(filepath.Join(d.project, ".openmax/tools/lint.sh")); err != nil {
				t.Fatal(err)
			}
			if err := os.Mkdir(filepath.Join(d.project, ".openmax/tools/lint.sh"), 0o755); err != nil {
				t.Fatal(err)
			}
		}, "external tool .openmax/tools/lint.json: code: .openmax/tools/lint.sh is a directory, not a regular file"},
		{"tool manifest", func(d loadDirs) { d.fifo(filepath.Join(d.project, ".openmax/tools/lint.json")) },
			"external tool .openmax/tools/lint.json: .openmax/tools/lint.json " + fifoKind},
		{"new tool manifest", func(d loadDirs) { d.fifo(filepath.Join(d.project, ".openmax/tools/more.json")) },
			"external tool .openmax/tools/more.json: .openmax/tools/more.json " + fifoKind},
		{"skill", func(d loadDirs) { d.fifo(filepath.Join(d.project, ".openmax/skills/review.md")) },
			".openmax/skills/review.md: not a regular file (it is a named pipe (FIFO))"},
		{"system prompt", func(d loadDirs) { d.fifo(filepath.Join(d.project, ".openmax/system.md")) },
			".openmax/system.md: not a regular file (it is a named pipe (FIFO))"},
		{"project policy", func(d loadDirs) { d.fifo(filepath.Join(d.project, ".openmax/policy.json")) },
			"/.openmax/policy.json " + fifoKind},
	}
	bin := buildBinary(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			project, err := filepath.EvalSymlinks(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			d := loadDirs{t: t, project: project}
			writeFile(t, filepath.Join(project, ".openmax/tools/lint.json"), toolManifest)
			writeFile(t, filepath.Join(project, ".openmax/tools/lint.sh"), "echo linted\n")
			writeFile(t, filepath.Join(project, ".openmax/skills/review.md"), "Review diffs line by line.\n")
			writeFile(t, filepath.Join(project, ".openmax/system.md"), "Answer briefly.\n")
			writeFile(t, filepath.Join(project, ".openmax/policy.json"), `{"deny":[{"tool":"run_command","reason":"no commands"}]}`)
			env := trustedBinaryEnv(t, ctx, bin, project, "")
			sc := filepath.Join(t.TempDir(), "s.yaml")
			writeFile(t, sc, "replies:\n  - text: one\n  - text: two\n")
			s := startLoadSession(t, ctx, bin, env, "--stdio", "--provider", "script", "--script", sc, "--project", project)
			s.waitFor("hello")
			s.send(`{"cmd":"user","text":"hi"}`)
			s.waitFor("done")
			tc.place(d)
			s.send(`{"cmd":"reload"}`)
			refrozen := s.waitFor("refrozen")
			var changes []string
			for _, c := range refrozen["changes"].([]any) {
				changes = append(changes, c.(string))
			}
			if !slices.ContainsFunc(changes, func(c string) bool {
				return strings.HasPrefix(c, "not loaded: ") && strings.Contains(c, tc.change)
			}) {
				t.Errorf("refrozen changes %q lack a \"not loaded: ...%s\"", changes, tc.change)
			}
			s.send(`{"cmd":"user","text":"again"}`)
			if done := s.waitFor("done"); done["stop_reason"] != "stop" {
				t.Errorf("done %v", done)
			}
			code, stderr := s.eof()
			if code != 0 {
				t.Errorf("exit %d", code)
			}
			checkStderr(t, stderr, []string{tc.change})
		})
	}
}

// TestDirectoryAsToolCodeIsRefused: an external tool whose code is a
// directory never "runs" (/bin/sh given a directory exits 0 with no output,
// which was reported as a successful call): at start it is not loaded, and
// when the code turns into a directory after the load, the call fails
// naming it. Before the fix both calls ended ok:true with empty output.
func TestDirectoryAsToolCodeIsRefused(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary; skipped in -short mode")
	}
	cases := []struct {
		name      string
		atStart   bool   // the code is a directory before openmax starts
		wantError string // in the failed call's output
	}{
		{"at start", true, "unknown tool"},
		{"after the load", false, "cannot run lint: .openmax/tools/lint.sh is a directory, not a regular file"},
	}
	bin := buildBinary(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			project, err := filepath.EvalSymlinks(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			code := filepath.Join(project, ".openmax/tools/lint.sh")
			writeFile(t, filepath.Join(project, ".openmax/tools/lint.json"), toolManifest)
			writeFile(t, code, "echo linted\n")
			toDir := func() {
				if err := os.Remove(code); err != nil {
					t.Fatal(err)
				}
				if err := os.Mkdir(code, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			if tc.atStart {
				toDir()
			}
			env := trustedBinaryEnv(t, ctx, bin, project, "")
			sc := filepath.Join(t.TempDir(), "s.yaml")
			writeFile(t, sc, "replies:\n  - text: one\n  - tool_calls:\n      - {id: c1, name: lint, args: {}}\n  - text: two\n")
			s := startLoadSession(t, ctx, bin, env, "--stdio", "--provider", "script", "--script", sc, "--project", project)
			s.waitFor("hello")
			s.send(`{"cmd":"approval_mode","mode":"auto"}`)
			s.waitFor("approval_mode")
			s.send(`{"cmd":"user","text":"hi"}`)
			s.waitFor("done")
			if !tc.atStart {
				toDir()
			}
			s.send(`{"cmd":"user","text":"lint"}`)
			end := s.waitFor("tool_end")
			if end["ok"] != false || !strings.Contains(end["output"].(string), tc.wantError) {
				t.Errorf("tool_end %v, want a failure saying %q", end, tc.wantError)
			}
			s.waitFor("done")
			if code, stderr := s.eof(); code != 0 {
				t.Errorf("exit %d: %s", code, stderr)
			} else if tc.atStart {
				checkStderr(t, stderr, []string{"code: .openmax/tools/lint.sh is a directory, not a regular file"})
			}
		})
	}
}

// TestEOFAndSIGTERMEndOpenmaxAmidFIFOs: with a FIFO in the place of every
// file openmax loads from the project and the configuration directory at
// once, openmax says hello and then honours EOF on stdin and SIGTERM, also
// while a tool is stuck reading a FIFO of its own (the turn ends
// cancelled). Before the fix openmax never said hello and ignored both.
func TestEOFAndSIGTERMEndOpenmaxAmidFIFOs(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary; skipped in -short mode")
	}
	cases := []struct {
		name     string
		stuck    bool // a run_command reads a FIFO nobody writes when the end comes
		sigterm  bool // the end is SIGTERM (else EOF on stdin)
		wantDone string
	}{
		{name: "eof", wantDone: "stop"},
		{name: "sigterm", sigterm: true, wantDone: "stop"},
		{name: "sigterm while a tool is stuck", stuck: true, sigterm: true, wantDone: "cancelled"},
	}
	bin := buildBinary(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			project, err := filepath.EvalSymlinks(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			d := loadDirs{t: t, project: project}
			env := trustedBinaryEnv(t, ctx, bin, project, "")
			d.config = filepath.Join(envValue(env, "XDG_CONFIG_HOME"), "openmax")
			writeFile(t, filepath.Join(project, ".openmax/tools/lint.json"), toolManifest)
			for _, p := range []string{
				".openmax/tools/lint.sh", ".openmax/tools/other.json", ".openmax/skills/review.md",
				".openmax/system.md", ".openmax/policy.json", ".openmax/hooks.json", "pipe",
			} {
				d.fifo(filepath.Join(project, p))
			}
			for _, p := range []string{"hooks.json", "policy.json", "sources.json"} {
				d.fifo(filepath.Join(d.config, p))
			}
			script := "replies:\n  - text: one\n"
			if tc.stuck {
				script = "replies:\n  - tool_calls:\n      - {id: c1, name: run_command, args: {argv: [cat, pipe]}}\n  - text: never\n"
			}
			sc := filepath.Join(t.TempDir(), "s.yaml")
			writeFile(t, sc, script)
			s := startLoadSession(t, ctx, bin, env, "--stdio", "--provider", "script", "--script", sc, "--project", project)
			s.waitFor("hello")
			if tc.stuck {
				// The user policy is a FIFO, so every call is refused
				// (fail closed): put a readable one back for this case.
				if err := os.Remove(filepath.Join(d.config, "policy.json")); err != nil {
					t.Fatal(err)
				}
				if err := os.Remove(filepath.Join(project, ".openmax/policy.json")); err != nil {
					t.Fatal(err)
				}
				s.send(`{"cmd":"reload"}`)
				s.waitFor("refrozen")
				s.send(`{"cmd":"approval_mode","mode":"auto"}`)
				s.waitFor("approval_mode")
			}
			s.send(`{"cmd":"user","text":"hi"}`)
			if tc.stuck {
				s.waitFor("tool_start")
			} else {
				s.waitFor("done")
			}
			end := s.eof
			if tc.sigterm {
				if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
					t.Fatal(err)
				}
				end = s.exit // stdin stays open: the signal alone ends it
			}
			code, stderr := end()
			if code != 0 {
				t.Errorf("exit %d: %s", code, stderr)
			}
			var done string
			for _, l := range s.seen {
				if strings.Contains(l, `"type":"done"`) {
					done = l
				}
			}
			if !strings.Contains(done, `"stop_reason":"`+tc.wantDone+`"`) {
				t.Errorf("done %s, want stop_reason %s", done, tc.wantDone)
			}
			checkStderr(t, stderr, []string{".openmax/tools/lint.sh " + fifoKind, ".openmax/hooks.json " + fifoKind, "sources.json " + fifoKind})
		})
	}
}
