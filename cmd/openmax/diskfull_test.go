//go:build linux

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/openmax/openmax/core/wire"
)

// setFileSizeLimit sets the soft RLIMIT_FSIZE of process pid: past it, a
// write to a regular file is cut short and then fails (EFBIG), which is how
// a disk that fills up looks to a writer. Any process may do this to its own
// user's processes, so the test needs no privileges and no tiny filesystem.
func setFileSizeLimit(t *testing.T, pid int, limit uint64) {
	t.Helper()
	var lim syscall.Rlimit
	if _, _, errno := syscall.RawSyscall6(syscall.SYS_PRLIMIT64, uintptr(pid), syscall.RLIMIT_FSIZE, 0, uintptr(unsafe.Pointer(&lim)), 0, 0); errno != 0 {
		t.Fatalf("prlimit on process %d: %v", pid, errno)
	}
	lim.Cur = min(limit, lim.Max)
	if _, _, errno := syscall.RawSyscall6(syscall.SYS_PRLIMIT64, uintptr(pid), syscall.RLIMIT_FSIZE, uintptr(unsafe.Pointer(&lim)), 0, 0, 0); errno != 0 {
		t.Fatalf("prlimit on process %d: %v", pid, errno)
	}
}

// TestDiskFullTurnsRecover is issue 9's point 14 through the real binary:
// the session file's disk "fills up" in the middle of a session (a user
// record is cut short), so turns fail, each with an error line and done
// error as the contract says; once there is room again the next turn
// succeeds in the same process; and a fresh process continuing the session
// sees every completed record and nothing of the failed ones.
func TestDiskFullTurnsRecover(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary; skipped in -short mode")
	}
	bin := buildBinary(t)
	state, project := t.TempDir(), t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	env := trustedBinaryEnv(t, ctx, bin, project, state)

	s := startLive(t, ctx, bin, env, "--stdio", "--provider", "echo", "--project", project, "--session-id", "s-full")
	s.send(`{"cmd":"user","text":"one"}`)
	if done := s.until(ctx, `"type":"done"`); !strings.Contains(done, `"stop_reason":"stop"`) {
		t.Fatalf("first turn: %s", done)
	}
	files, err := filepath.Glob(filepath.Join(state, "openmax", "projects", "*", "sessions", "s-full.jsonl"))
	if err != nil || len(files) != 1 {
		t.Fatalf("session file: %v %v", files, err)
	}
	path := files[0]
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	good := info.Size()

	// The disk is full: room for 20 more bytes, less than a record.
	setFileSizeLimit(t, s.cmd.Process.Pid, uint64(good)+20)
	for _, text := range []string{"two", "three"} {
		s.send(`{"cmd":"user","text":"` + text + `"}`)
		errLine := s.until(ctx, `"type":"error"`)
		done := s.until(ctx, `"type":"done"`)
		if !strings.Contains(done, `"stop_reason":"error"`) || !strings.Contains(errLine, "session record") {
			t.Fatalf("turn %q on a full disk: %s then %s", text, errLine, done)
		}
		// Whatever of the record got out was cut off again.
		if data, err := os.ReadFile(path); err != nil || int64(len(data)) != good {
			t.Fatalf("after the failed turn %q the session file holds %d bytes, want its %d good ones (%v):\n%s", text, len(data), good, err, data)
		}
	}

	// Space is freed: the same process's next turn succeeds.
	setFileSizeLimit(t, s.cmd.Process.Pid, ^uint64(0))
	s.send(`{"cmd":"user","text":"four"}`)
	if done := s.until(ctx, `"type":"done"`); !strings.Contains(done, `"stop_reason":"stop"`) {
		t.Fatalf("turn after the disk recovered: %s\nstderr: %s", done, s.stderr.String())
	}
	if code := s.finish(); code != 0 {
		t.Errorf("exit %d", code)
	}

	// A fresh process sees the completed records, in order, and no others.
	cont := exec.CommandContext(ctx, bin, "--stdio", "--provider", "echo", "--project", project, "--continue")
	cont.Env = env
	var stderr bytes.Buffer
	cont.Stderr = &stderr
	out, err := cont.Output()
	if err != nil {
		t.Fatalf("--continue: %v %s", err, stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 2 {
		t.Fatalf("--continue printed:\n%s", out)
	}
	var tr wire.Transcript
	if err := json.Unmarshal([]byte(lines[1]), &tr); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range tr.Messages {
		got = append(got, m.Role+":"+m.Content)
	}
	if want := "user:one assistant:one user:four assistant:four"; strings.Join(got, " ") != want {
		t.Errorf("continued transcript %q, want %q", strings.Join(got, " "), want)
	}
}
