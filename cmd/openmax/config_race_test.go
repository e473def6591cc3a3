package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openmax/openmax/core/config"
	"github.com/openmax/openmax/core/wire"
)

// liveStdio is a running `openmax --stdio` that a test talks to line by
// line.
type liveStdio struct {
	t      *testing.T
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan string
	stderr bytes.Buffer
	seen   []string // every stdout line so far
}

// startLive starts bin with args and env and waits for its hello.
func startLive(t *testing.T, ctx context.Context, bin string, env []string, args ...string) *liveStdio {
	t.Helper()
	l := &liveStdio{t: t, cmd: exec.CommandContext(ctx, bin, args...), lines: make(chan string, 256)}
	l.cmd.Env = env
	l.cmd.Stderr = &l.stderr
	var err error
	if l.stdin, err = l.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	out, err := l.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := l.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		l.cmd.Process.Kill()
		l.cmd.Wait()
	})
	go func() {
		defer close(l.lines)
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
		for sc.Scan() {
			l.lines <- sc.Text()
		}
	}()
	l.until(ctx, `"type":"hello"`)
	return l
}

// send writes one command line.
func (l *liveStdio) send(line string) {
	l.t.Helper()
	if _, err := io.WriteString(l.stdin, line+"\n"); err != nil {
		l.t.Fatalf("stdin: %v", err)
	}
}

// until reads stdout up to the first line containing want and returns it.
func (l *liveStdio) until(ctx context.Context, want string) string {
	l.t.Helper()
	for {
		select {
		case line, ok := <-l.lines:
			if !ok {
				l.t.Fatalf("stdout ended before a line with %s; stdout:\n%s\nstderr:\n%s", want, strings.Join(l.seen, "\n"), l.stderr.String())
			}
			l.seen = append(l.seen, line)
			if strings.Contains(line, want) {
				return line
			}
		case <-ctx.Done():
			l.t.Fatalf("no line with %s: %v; stdout:\n%s", want, ctx.Err(), strings.Join(l.seen, "\n"))
		}
	}
}

// finish closes stdin, reads the rest of stdout, waits for the exit and
// checks the whole stream with the wire checker. It returns the exit code.
func (l *liveStdio) finish() int {
	l.t.Helper()
	l.stdin.Close()
	for line := range l.lines {
		l.seen = append(l.seen, line)
	}
	err := l.cmd.Wait()
	code := l.cmd.ProcessState.ExitCode()
	if err != nil && code < 0 {
		l.t.Fatalf("openmax: %v\nstderr: %s", err, l.stderr.String())
	}
	if _, err := wire.CheckStreamStrict(strings.NewReader(strings.Join(l.seen, "\n")), func(v wire.Verdict) {
		if v.Err != nil {
			l.t.Errorf("stdout line %d: %v", v.Line, v.Err)
		}
	}); err != nil {
		l.t.Fatal(err)
	}
	return code
}

// savedProjects reads projects.json as another program would.
func savedProjects(t *testing.T, cfg string) map[string]config.Project {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(cfg, "openmax", "projects.json"))
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Projects map[string]config.Project `json:"projects"`
	}
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatalf("projects.json: %v\n%s", err, data)
	}
	return f.Projects
}

// TestConcurrentTrustProcesses: twenty `openmax trust` processes started at
// once, each for its own directory, all succeed and all twenty projects end
// up trusted (issue 9: the last writer's stale map used to win).
func TestConcurrentTrustProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary; skipped in -short mode")
	}
	bin := buildBinary(t)
	cfg, base := t.TempDir(), t.TempDir()
	env := append(os.Environ(), "XDG_CONFIG_HOME="+cfg, "XDG_STATE_HOME="+t.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const n = 20
	dirs := make([]string, n)
	cmds := make([]*exec.Cmd, n)
	outs := make([]bytes.Buffer, n)
	for i := range n {
		dirs[i] = filepath.Join(base, fmt.Sprintf("p%02d", i))
		if err := os.Mkdir(dirs[i], 0o755); err != nil {
			t.Fatal(err)
		}
		cmds[i] = exec.CommandContext(ctx, bin, "trust", dirs[i])
		cmds[i].Env = env
		cmds[i].Stdout, cmds[i].Stderr = &outs[i], &outs[i]
	}
	// Start them all before waiting for any, so they overlap.
	for _, c := range cmds {
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
	}
	for i, c := range cmds {
		if err := c.Wait(); err != nil || outs[i].String() != "trusted "+dirs[i]+"\n" {
			t.Errorf("openmax trust %s: %v %q", dirs[i], err, outs[i].String())
		}
	}
	saved := savedProjects(t, cfg)
	for _, d := range dirs {
		if !saved[d].Trusted {
			t.Errorf("%s is not trusted after all %d trust processes succeeded", d, n)
		}
	}
	if len(saved) != n {
		t.Errorf("%d projects saved, want %d", len(saved), n)
	}
}

// TestSessionModeSaveKeepsOtherProcessesSettings is the lost update of
// issue 9 through real processes: a session starts in project A; then
// another process sets project B, which was auto, to readonly (and is
// acknowledged), and a third trusts project C; then the session saves its
// own mode. B must stay readonly and C trusted. Meanwhile a second session
// in project A sets A to readonly, and the first session's next tool call
// obeys it: a running session reads the mode saved now, not its copy.
func TestSessionModeSaveKeepsOtherProcessesSettings(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary; skipped in -short mode")
	}
	bin := buildBinary(t)
	cfg, state := t.TempDir(), t.TempDir()
	a, b, c := t.TempDir(), t.TempDir(), t.TempDir()
	env := append(os.Environ(), "XDG_CONFIG_HOME="+cfg, "XDG_STATE_HOME="+state)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	run := func(stdin string, args ...string) string {
		t.Helper()
		cmd := exec.CommandContext(ctx, bin, args...)
		cmd.Env = env
		cmd.Stdin = strings.NewReader(stdin)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("openmax %v: %v\n%s%s", args, err, out, stderr.String())
		}
		return string(out)
	}
	setMode := func(project, mode string) {
		t.Helper()
		out := run(`{"cmd":"approval_mode","mode":"`+mode+`"}`+"\n", "--stdio", "--provider", "echo", "--project", project)
		if !strings.Contains(out, `{"type":"approval_mode","mode":"`+mode+`"}`) {
			t.Fatalf("approval_mode %s in %s not acknowledged:\n%s", mode, project, out)
		}
	}
	run("", "trust", a)
	run("", "trust", b)
	setMode(a, "auto")
	setMode(b, "auto")

	script := filepath.Join(t.TempDir(), "s.yaml")
	if err := os.WriteFile(script, []byte(`replies:
  - tool_calls:
      - {id: w1, name: write_file, args: {path: out.txt, content: "x\n"}}
  - text: done
`), 0o644); err != nil {
		t.Fatal(err)
	}
	session := startLive(t, ctx, bin, env, "--stdio", "--provider", "script", "--script", script, "--project", a)

	setMode(b, "readonly")
	run("", "trust", c)
	session.send(`{"cmd":"approval_mode","mode":"auto"}`)
	session.until(ctx, `{"type":"approval_mode","mode":"auto"}`)
	saved := savedProjects(t, cfg)
	if saved[b].Mode != "readonly" || !saved[c].Trusted || !saved[b].Trusted || saved[a].Mode != "auto" {
		t.Errorf("after the session saved its mode: A %+v, B %+v (want readonly), C %+v (want trusted)", saved[a], saved[b], saved[c])
	}

	// Another process makes A readonly; the running session obeys.
	setMode(a, "readonly")
	session.send(`{"cmd":"user","text":"write it"}`)
	end := session.until(ctx, `"type":"tool_end"`)
	session.until(ctx, `"type":"done"`)
	if !strings.Contains(end, "readonly") || strings.Contains(end, `"ok":true`) {
		t.Errorf("tool_end %s: want refused because A is now readonly", end)
	}
	if _, err := os.Stat(filepath.Join(a, "out.txt")); err == nil {
		t.Error("write_file ran in a project another process had made readonly")
	}
	if code := session.finish(); code != 0 {
		t.Errorf("session exit %d\n%s", code, session.stderr.String())
	}
	if saved := savedProjects(t, cfg); saved[a].Mode != "readonly" || saved[b].Mode != "readonly" || !saved[c].Trusted {
		t.Errorf("at the end: A %+v, B %+v, C %+v", saved[a], saved[b], saved[c])
	}
}

// TestCorruptSettingsAreNeverOverwritten: with a projects.json that does
// not parse, `openmax trust` and a session's approval_mode fail saying
// which file is wrong, and the file is left exactly as it was (it is the
// user's only record of every trust).
func TestCorruptSettingsAreNeverOverwritten(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary; skipped in -short mode")
	}
	bin := buildBinary(t)
	cfg, project := t.TempDir(), t.TempDir()
	env := append(os.Environ(), "XDG_CONFIG_HOME="+cfg, "XDG_STATE_HOME="+t.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	path := filepath.Join(cfg, "openmax", "projects.json")
	bad := `{"projects":{"/home/me/work":{"trusted":true},` // cut short
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(bad), 0o600); err != nil {
		t.Fatal(err)
	}
	trust := exec.CommandContext(ctx, bin, "trust", project)
	trust.Env = env
	out, err := trust.CombinedOutput()
	if err == nil || !strings.Contains(string(out), path) || !strings.Contains(string(out), "not valid") {
		t.Errorf("trust over a corrupt file: %v %s", err, out)
	}
	// A session cannot read its settings: it says why on stderr, counts the
	// project as untrusted, and a mode it is sent never reaches the file.
	session := startLive(t, ctx, bin, env, "--stdio", "--provider", "echo", "--project", project)
	session.send(`{"cmd":"approval_mode","mode":"auto"}`)
	session.send(`{"cmd":"user","text":"hi"}`)
	session.until(ctx, `"type":"done"`)
	if code := session.finish(); code != 0 {
		t.Errorf("session exit %d", code)
	}
	// The contract acknowledges a mode only once it is persisted: here it
	// cannot be, so the answer is a protocol_error saying so.
	seen := strings.Join(session.seen, "\n")
	if strings.Contains(seen, `"type":"approval_mode"`) || !strings.Contains(seen, "nothing can be saved") {
		t.Errorf("approval_mode with unreadable settings was not refused:\n%s", seen)
	}
	if stderr := session.stderr.String(); !strings.Contains(stderr, path) || !strings.Contains(stderr, "not valid") {
		t.Errorf("session stderr does not name the bad file: %s", stderr)
	}
	if data, err := os.ReadFile(path); err != nil || string(data) != bad {
		t.Errorf("projects.json was rewritten (%v):\n%s", err, data)
	}
}
