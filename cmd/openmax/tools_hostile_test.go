package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/openmax/openmax/core/wire"
	"github.com/openmax/openmax/internal/citest"
)

// toolSession is the real binary serving a project in auto mode with a
// scripted model, for the hostile tool tests.
type toolSession struct {
	t      *testing.T
	dir    string // the project
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan string
	seen   []string
	stderr *bytes.Buffer
}

// startToolSession writes script, trusts a fresh project (prepared by
// setup), starts openmax --stdio on it in auto mode and sends one user
// command.
func startToolSession(t *testing.T, ctx context.Context, script string, setup func(dir string)) *toolSession {
	t.Helper()
	bin := buildBinary(t)
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if setup != nil {
		setup(dir)
	}
	sc := filepath.Join(t.TempDir(), "s.yaml")
	if err := os.WriteFile(sc, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	cmdEnv := trustedBinaryEnv(t, ctx, bin, dir, "")
	s := &toolSession{t: t, dir: dir, stderr: &bytes.Buffer{}, lines: make(chan string, 1024)}
	s.cmd = exec.CommandContext(ctx, bin, "--stdio", "--provider", "script", "--script", sc, "--project", dir)
	s.cmd.Env = cmdEnv
	s.cmd.Stderr = s.stderr
	s.stdin, _ = s.cmd.StdinPipe()
	stdout, _ := s.cmd.StdoutPipe()
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.cmd.Process.Kill(); _ = s.cmd.Wait() })
	go func() {
		r := bufio.NewReaderSize(stdout, 1<<20)
		for {
			line, err := r.ReadString('\n')
			if line != "" {
				s.lines <- strings.TrimSuffix(line, "\n")
			}
			if err != nil {
				close(s.lines)
				return
			}
		}
	}()
	s.send(`{"cmd":"approval_mode","mode":"auto"}`)
	s.send(`{"cmd":"user","text":"go"}`)
	return s
}

func (s *toolSession) send(line string) {
	s.t.Helper()
	if _, err := io.WriteString(s.stdin, line+"\n"); err != nil {
		s.t.Fatal(err)
	}
}

// waitFor reads stdout until a line of type typ, which it returns; it
// fails the test after within.
func (s *toolSession) waitFor(typ string, within time.Duration) string {
	s.t.Helper()
	timer := time.NewTimer(within)
	defer timer.Stop()
	for {
		select {
		case l, ok := <-s.lines:
			if !ok {
				s.t.Fatalf("stdout ended before a %s line; stderr:\n%s", typ, s.stderr)
			}
			s.seen = append(s.seen, l)
			if strings.Contains(l, `"type":"`+typ+`"`) {
				return l
			}
		case <-timer.C:
			s.t.Fatalf("no %s line within %v; last lines:\n%s", typ, within, tail(s.seen, 5))
		}
	}
}

// finish closes stdin, waits for openmax to exit and checks the whole
// stdout: the checker accepts it, no line is longer than the stdio line
// cap, and there is exactly one done, which it returns.
func (s *toolSession) finish() string {
	s.t.Helper()
	s.stdin.Close()
	for l := range s.lines {
		s.seen = append(s.seen, l)
	}
	if err := s.cmd.Wait(); err != nil {
		s.t.Errorf("exit: %v; stderr:\n%s", err, s.stderr)
	}
	var dones []string
	for i, l := range s.seen {
		if len(l) > wire.MaxLine {
			s.t.Errorf("stdout line %d is %d bytes, over the %d-byte line cap: %.200s", i+1, len(l), wire.MaxLine, l)
		}
		if strings.Contains(l, `"type":"done"`) {
			dones = append(dones, l)
		}
	}
	if _, err := wire.CheckStreamStrict(strings.NewReader(strings.Join(s.seen, "\n")), func(v wire.Verdict) {
		if v.Err != nil {
			s.t.Errorf("line %d: %v", v.Line, v.Err)
		}
	}); err != nil {
		s.t.Error(err)
	}
	if len(dones) != 1 {
		s.t.Fatalf("%d done lines, want 1", len(dones))
	}
	return dones[0]
}

func tail(lines []string, n int) string {
	var out []string
	for _, l := range lines[max(0, len(lines)-n):] {
		if len(l) > 300 {
			l = l[:300] + "..."
		}
		out = append(out, l)
	}
	return strings.Join(out, "\n")
}

// waitPidFile waits for a command to write its pid to file (bounded: it is a
// real process).
func waitPidFile(t *testing.T, file string, stderr *bytes.Buffer) int {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if data, err := os.ReadFile(file); err == nil && bytes.HasSuffix(data, []byte("\n")) {
			pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
			if err != nil {
				t.Fatalf("pid file %q: %v", data, err)
			}
			t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
			return pid
		}
		if time.Now().After(deadline) {
			t.Fatalf("no pid in %s; stderr:\n%s", file, stderr)
		}
	}
}

// exchange swaps two names atomically (Linux renameat2 RENAME_EXCHANGE, one
// system call); elsewhere it is two renames through a third name.
func exchange(a, b string) error {
	nr := map[string]uintptr{"amd64": 316, "arm64": 276, "riscv64": 276, "loong64": 276, "386": 353}[runtime.GOARCH]
	if runtime.GOOS != "linux" || nr == 0 {
		tmp := a + ".swap"
		if err := os.Rename(a, tmp); err != nil {
			return err
		}
		if err := os.Rename(b, a); err != nil {
			return err
		}
		return os.Rename(tmp, b)
	}
	pa, err := syscall.BytePtrFromString(a)
	if err != nil {
		return err
	}
	pb, err := syscall.BytePtrFromString(b)
	if err != nil {
		return err
	}
	const atFDCWD = ^uintptr(99) // AT_FDCWD, -100
	const renameExchange = 2
	if _, _, e := syscall.Syscall6(nr, atFDCWD, uintptr(unsafe.Pointer(pa)), atFDCWD, uintptr(unsafe.Pointer(pb)), renameExchange, 0); e != 0 {
		return e
	}
	return nil
}

// TestFIFOSwapsNeverWedgeTools: while the project's file flips between a
// regular file and a FIFO (atomic exchanges, as fast as they go), the model
// reads, searches, writes and edits it 120 times. Every call must come
// back, as content or as a tool error naming the FIFO, and the turn must
// end with its one done; an open that waits for a FIFO writer would wedge
// the session for good.
func TestFIFOSwapsNeverWedgeTools(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary; skipped in -short mode")
	}
	var calls strings.Builder
	for i := 0; i < 30; i++ {
		fmt.Fprintf(&calls, "      - {name: read_file, args: {path: f.txt}}\n")
		fmt.Fprintf(&calls, "      - {name: search, args: {pattern: hello, path: f.txt}}\n")
		fmt.Fprintf(&calls, "      - {name: write_file, args: {path: f.txt, content: \"hello %d\\n\"}}\n", i)
		fmt.Fprintf(&calls, "      - {name: edit_file, args: {path: f.txt, old_string: hello, new_string: hello!}}\n")
	}
	script := "replies:\n  - tool_calls:\n" + calls.String() + "  - text: survived\n"
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	stop := make(chan struct{})
	swapped := make(chan int, 1)
	s := startToolSession(t, ctx, script, func(dir string) {
		f := filepath.Join(dir, "f.txt")
		if err := os.WriteFile(f, []byte("hello\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		alt := filepath.Join(dir, ".alt")
		if err := syscall.Mkfifo(alt, 0o644); err != nil {
			t.Fatal(err)
		}
		go func() {
			n := 0
			defer func() { swapped <- n }()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if exchange(f, alt) == nil {
					n++
				}
			}
		}()
	})
	defer func() {
		select {
		case <-stop:
		default:
			close(stop)
		}
	}()
	for {
		s.waitFor("tool_end", 10*time.Second)
		if n := strings.Count(strings.Join(s.seen, "\n"), `"type":"tool_end"`); n == 120 {
			break
		}
	}
	close(stop)
	t.Logf("%d swaps", <-swapped)
	s.waitFor("done", 20*time.Second)
	fifoErrors := 0
	for _, l := range s.seen {
		if strings.Contains(l, `"type":"tool_end"`) && strings.Contains(l, "named pipe (FIFO)") {
			fifoErrors++
		}
	}
	t.Logf("%d of 120 calls found the FIFO", fifoErrors)
	if done := s.finish(); !strings.Contains(done, `"stop_reason":"stop"`) {
		t.Errorf("done %s", done)
	}
}

// TestRunCommandDiesWithTheTurn: cancel during run_command ends the turn
// with done cancelled, and the command's whole process group is gone, the
// shell and the sleep it left in the background alike.
func TestRunCommandDiesWithTheTurn(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary and real commands; skipped in -short mode")
	}
	script := `replies:
  - tool_calls:
      - {id: c1, name: run_command, args: {argv: [sh, -c, "sleep 1000 & echo $! > bg.tmp && mv bg.tmp bg.pid && echo $$ > sh.tmp && mv sh.tmp sh.pid && wait"]}}
  - text: never reached
`
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s := startToolSession(t, ctx, script, nil)
	s.waitFor("tool_start", 20*time.Second)
	bg := waitPidFile(t, filepath.Join(s.dir, "bg.pid"), s.stderr)
	sh := waitPidFile(t, filepath.Join(s.dir, "sh.pid"), s.stderr)
	start := time.Now()
	s.send(`{"cmd":"cancel"}`)
	end := s.waitFor("tool_end", 20*time.Second)
	done := s.waitFor("done", 20*time.Second)
	t.Logf("done %v after the cancel", time.Since(start))
	if !strings.Contains(done, `"stop_reason":"cancelled"`) || !strings.Contains(end, `[killed: cancelled]`) {
		t.Errorf("tool_end %s\ndone %s", end, done)
	}
	for _, pid := range []int{sh, bg} {
		if !gone(pid) {
			t.Errorf("process %d outlived the cancelled turn", pid)
		}
	}
	s.finish()
}

// TestKilledOpenmaxLeavesNoCommand: openmax killed by SIGKILL (nothing to
// catch) while run_command runs: the command gets its parent-death signal
// and dies too, rather than running on as an orphan.
func TestKilledOpenmaxLeavesNoCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary and a real command; skipped in -short mode")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s := startCommandSession(t, ctx)
	if !alive(s.pid) {
		t.Fatalf("the command %d is not running", s.pid)
	}
	if err := s.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = s.cmd.Wait()
	if !gone(s.pid) {
		t.Errorf("run_command's process %d outlived openmax killed by SIGKILL", s.pid)
	}
}

// TestHugeFilesKeepLinesBounded: write_file over a 24 MiB file and
// edit_file on another: the diff event is a note with line counts, not
// 24 MiB of hunks (every line stays under the stdio line cap), edit_file
// refuses the file, and the peak RSS stays far under the file's size.
func TestHugeFilesKeepLinesBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary on 48 MiB of files; skipped in -short mode")
	}
	const size = 24 << 20
	script := `replies:
  - tool_calls:
      - {id: c1, name: write_file, args: {path: big.txt, content: "small\n"}}
      - {id: c2, name: edit_file, args: {path: other.txt, old_string: "a line", new_string: "one line"}}
  - text: done
`
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const line = "a line of text.\n"
	const lines = size / len(line)
	s := startToolSession(t, ctx, script, func(dir string) {
		content := bytes.Repeat([]byte(line), lines)
		for _, name := range []string{"big.txt", "other.txt"} {
			if err := os.WriteFile(filepath.Join(dir, name), content, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	})
	s.waitFor("done", 30*time.Second)
	hwm := vmHWM(t, s.cmd.Process.Pid)
	t.Logf("peak RSS %d KiB", hwm>>10)
	if hwm > 64<<20 {
		t.Errorf("peak RSS %d MiB for a %d MiB file", hwm>>20, size>>20)
	}
	var diff, edit string
	for _, l := range s.seen {
		switch {
		case strings.Contains(l, `"type":"diff"`):
			diff = l
		case strings.Contains(l, `"type":"tool_end","call_id":"c2"`):
			edit = l
		}
	}
	if !strings.Contains(diff, `[diff not computed: the old content is 24 MiB, the new 6 bytes`) || !strings.Contains(diff, fmt.Sprintf(`"added":1,"removed":%d`, lines)) {
		t.Errorf("diff %.500s", diff)
	}
	if !strings.Contains(edit, `"ok":false`) || !strings.Contains(edit, "other.txt is 24 MiB, over edit_file's limit of 16 MiB") {
		t.Errorf("edit_file %s", edit)
	}
	if data, err := os.ReadFile(filepath.Join(s.dir, "big.txt")); err != nil || string(data) != "small\n" {
		t.Errorf("big.txt now %.40q (%v)", data, err)
	}
	s.finish()
}

// vmHWM reads the peak resident set size of a live process (Linux).
func vmHWM(t *testing.T, pid int) int64 {
	t.Helper()
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		citest.SkipOutsideCI(t, fmt.Sprintf("no /proc here to read peak memory from: %v", err))
	}
	for _, l := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmHWM in /proc/PID/status")
	return 0
}
