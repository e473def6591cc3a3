package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// commandSession starts the real binary on a project whose scripted model
// runs `sleep` through run_command (writing the shell's pid to a file
// first), in auto mode, and returns once the command is running.
type commandSession struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout io.ReadCloser
	lines  *bufio.Scanner
	stderr *bytes.Buffer
	pid    int // the command's process (sh exec'd into sleep)
}

func startCommandSession(t *testing.T, ctx context.Context) *commandSession {
	t.Helper()
	bin := buildBinary(t)
	dir := t.TempDir()
	sc := filepath.Join(t.TempDir(), "s.yaml")
	script := `replies:
  - tool_calls:
      - {id: c1, name: run_command, args: {argv: [sh, -c, "echo $$ > pid.tmp && mv pid.tmp pid && exec sleep 1000"]}}
  - text: never reached
`
	if err := os.WriteFile(sc, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	cmdEnv := trustedBinaryEnv(t, ctx, bin, dir, "")
	s := &commandSession{stderr: &bytes.Buffer{}}
	s.cmd = exec.CommandContext(ctx, bin, "--stdio", "--provider", "script", "--script", sc, "--project", dir)
	s.cmd.Env = cmdEnv
	s.cmd.Stderr = s.stderr
	s.stdin, _ = s.cmd.StdinPipe()
	s.stdout, _ = s.cmd.StdoutPipe()
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.cmd.Process.Kill() })
	if _, err := io.WriteString(s.stdin, `{"cmd":"approval_mode","mode":"auto"}`+"\n"+`{"cmd":"user","text":"go"}`+"\n"); err != nil {
		t.Fatal(err)
	}
	s.lines = bufio.NewScanner(s.stdout)
	for s.lines.Scan() {
		if strings.Contains(s.lines.Text(), `"type":"tool_start"`) {
			break
		}
	}
	// The command is a real process: wait until it has written its pid.
	pidFile := filepath.Join(dir, "pid")
	for deadline := time.Now().Add(20 * time.Second); ; {
		data, err := os.ReadFile(pidFile)
		if err == nil {
			s.pid, err = strconv.Atoi(strings.TrimSpace(string(data)))
			if err != nil {
				t.Fatalf("pid file %q: %v", data, err)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("run_command never started; stderr:\n%s", s.stderr)
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Cleanup(func() { _ = syscall.Kill(s.pid, syscall.SIGKILL) })
	return s
}

// alive reports whether pid is a live (not zombie) process.
func alive(pid int) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// The state follows the parenthesised command name.
	i := bytes.LastIndexByte(data, ')')
	return i < 0 || i+2 >= len(data) || data[i+2] != 'Z'
}

// gone waits (bounded) for pid to be gone: killing a process group is
// asynchronous to the exit of the process that sent the signal.
func gone(pid int) bool {
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if !alive(pid) {
			return true
		}
	}
	return false
}

// TestClosedStdoutEndsSessionAndItsCommands: a client that closes its end of
// stdout while run_command runs. openmax must not die of SIGPIPE at the next
// write (leaving the command orphaned): the write fails, the server sees
// stdout is gone, cancels the turn (killing the command) and exits 1.
func TestClosedStdoutEndsSessionAndItsCommands(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary and a real command; skipped in -short mode")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s := startCommandSession(t, ctx)
	s.stdout.Close()
	// The cancel makes the turn write tool_end and done to the closed pipe.
	if _, err := io.WriteString(s.stdin, `{"cmd":"cancel"}`+"\n"); err != nil {
		t.Fatal(err)
	}
	err := s.cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("exit %v (want exit code 1, not a signal death); stderr:\n%s", err, s.stderr)
	}
	if !strings.Contains(s.stderr.String(), "shutting down") {
		t.Errorf("stderr does not say stdout is gone:\n%s", s.stderr)
	}
	if !gone(s.pid) {
		t.Errorf("run_command's process %d outlived the session", s.pid)
	}
}

// TestSIGHUPShutsDownLikeSIGTERM: SIGHUP during a running command cancels
// the turn (done cancelled), kills the command and exits 0, rather than
// killing openmax and orphaning the command.
func TestSIGHUPShutsDownLikeSIGTERM(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary and a real command; skipped in -short mode")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s := startCommandSession(t, ctx)
	if err := s.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	var last string
	for s.lines.Scan() {
		last = s.lines.Text()
	}
	if err := s.cmd.Wait(); err != nil {
		t.Fatalf("exit: %v; stderr:\n%s", err, s.stderr)
	}
	if !strings.Contains(last, `"stop_reason":"cancelled"`) {
		t.Errorf("last line %s, want done cancelled", last)
	}
	if !gone(s.pid) {
		t.Errorf("run_command's process %d outlived the session", s.pid)
	}
}
