//go:build unix

package procgroup_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/openmax/openmax/internal/procgroup"
	"github.com/openmax/openmax/provider/clock"
)

// TestRun runs real processes through each way a Run ends.
func TestRun(t *testing.T) {
	tests := []struct {
		name    string
		script  string
		cancel  bool // ctx is cancelled once the process runs
		timeout bool // the fake clock passes the timeout once the process runs
		ending  procgroup.Ending
		code    int // exit code; -1 for killed
		out     string
	}{
		{"exit 0", "echo hi", false, false, procgroup.Exited, 0, "hi\n"},
		{"exit 3 with stderr", "echo out; echo err >&2; exit 3", false, false, procgroup.Exited, 3, "out\nerr\n"},
		{"timeout on the clock", "echo started; exec sleep 30", false, true, procgroup.TimedOut, -1, "started\n"},
		{"cancel", "echo started; exec sleep 30", true, false, procgroup.Cancelled, -1, "started\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fake := clock.NewFake(time.Unix(0, 0))
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			// The test learns the process runs from its first output.
			out := &firstWrite{started: make(chan struct{})}
			cmd := exec.Command("/bin/sh", "-c", tc.script)
			type ran struct {
				res procgroup.Result
				err error
			}
			done := make(chan ran, 1)
			go func() {
				res, err := procgroup.Run(ctx, cmd, out, procgroup.Options{Timeout: time.Minute, Sleep: clock.Sleeper(fake)})
				done <- ran{res, err}
			}()
			if tc.cancel || tc.timeout {
				<-out.started
				if tc.cancel {
					cancel()
				} else {
					if err := fake.BlockUntil(context.Background(), 1); err != nil {
						t.Fatal(err)
					}
					fake.Advance(time.Minute)
				}
			}
			r := <-done
			if r.err != nil {
				t.Fatal(r.err)
			}
			if r.res.Ending != tc.ending {
				t.Errorf("ending %v, want %v", r.res.Ending, tc.ending)
			}
			if got := cmd.ProcessState.ExitCode(); got != tc.code {
				t.Errorf("exit code %d, want %d (wait: %v)", got, tc.code, r.res.Err)
			}
			if got := out.buf.String(); got != tc.out {
				t.Errorf("output %q, want %q", got, tc.out)
			}
		})
	}
}

// TestRunKillsWhatTheProcessLeft: a background child that keeps the
// output pipe open is killed with the group once the process exits. It
// also holds a pipe of the test's (fd 3), which reaches EOF only when the
// child is dead: without the kill the test would block until it times out.
func TestRunKillsWhatTheProcessLeft(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var out bytes.Buffer
	cmd := exec.Command("/bin/sh", "-c", "sleep 100000 & echo spawned")
	cmd.ExtraFiles = []*os.File{w}
	res, err := procgroup.Run(context.Background(), cmd, &out, procgroup.Options{Timeout: time.Hour})
	w.Close()
	if err != nil || res.Ending != procgroup.Exited || res.Err != nil || out.String() != "spawned\n" {
		t.Fatalf("run: %+v, %v, output %q", res, err, out.String())
	}
	if n, err := r.Read(make([]byte, 1)); n != 0 || !errors.Is(err, io.EOF) {
		t.Errorf("read from the child's pipe: %d, %v", n, err)
	}
}

// TestRunStartFails: a program that cannot start is the error, with no
// result.
func TestRunStartFails(t *testing.T) {
	cmd := exec.Command(filepath.Join(t.TempDir(), "missing"))
	_, err := procgroup.Run(context.Background(), cmd, &bytes.Buffer{}, procgroup.Options{Timeout: time.Minute})
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("err %v, want not exist", err)
	}
}

// TestKillReachesTheGroup: Kill kills the leader and what it started.
func TestKillReachesTheGroup(t *testing.T) {
	cmd := exec.Command("/bin/sh", "-c", "sleep 30 & wait")
	procgroup.Setup(cmd, false)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	procgroup.Kill(cmd.Process)
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != -1 {
		t.Errorf("wait: %v, want killed", err)
	}
	procgroup.Kill(cmd.Process) // gone: harmless
	procgroup.Kill(nil)         // never started: harmless
}

func TestSearchPath(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, mode os.FileMode) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"), mode); err != nil {
			t.Fatal(err)
		}
	}
	write("tool", 0o755)
	write("plain", 0o644)
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, prog string
		env        []string
		want       string
	}{
		{"found", "tool", []string{"PATH=" + dir}, filepath.Join(dir, "tool")},
		{"last PATH wins", "tool", []string{"PATH=/nowhere", "PATH=/x:" + dir}, filepath.Join(dir, "tool")},
		{"not executable", "plain", []string{"PATH=" + dir}, ""},
		{"a directory", "sub", []string{"PATH=" + dir}, ""},
		{"relative entry skipped", "tool", []string{"PATH=.:" + dir[1:]}, ""},
		{"no PATH", "tool", nil, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, path := procgroup.SearchPath(tc.prog, tc.env)
			if got != tc.want {
				t.Errorf("SearchPath = %q, want %q", got, tc.want)
			}
			if len(tc.env) > 0 && path != tc.env[len(tc.env)-1][len("PATH="):] {
				t.Errorf("path %q", path)
			}
		})
	}
}

// firstWrite keeps what is written and closes started at the first write.
type firstWrite struct {
	buf     bytes.Buffer
	started chan struct{}
}

func (w *firstWrite) Write(p []byte) (int, error) {
	if w.buf.Len() == 0 {
		close(w.started)
	}
	return w.buf.Write(p)
}
