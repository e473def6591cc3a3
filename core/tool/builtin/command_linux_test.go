package builtin

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/openmax/openmax/provider/clock"
)

// TestRunCommandKillsTheGroup: the helper's child, a sleep holding the
// output pipe, dies with the helper's process group, both when the
// timeout (on the fake clock, advanced once the helper has started it)
// kills the helper and when the helper exits by itself: run_command
// returns with the child gone, not after the drain wait with it alive.
func TestRunCommandKillsTheGroup(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, mode string
		timeout    bool // advance the clock past the timeout once the child runs
		ok         bool
		out        string
	}{
		{"timeout kills the group", "spawn-wait", true, false, "spawned\n[killed: timed out after 500ms]"},
		{"exit kills the group", "spawn", false, true, "spawned\n[exit code: 0]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fifo := filepath.Join(t.TempDir(), "pid")
			if err := syscall.Mkfifo(fifo, 0o600); err != nil {
				t.Fatal(err)
			}
			fake := clock.NewFake(time.Unix(0, 0))
			e := newEnvAt(t, root, Options{Env: append(helperEnvFor(t, tc.mode), "HELPER_PID="+fifo), Clock: fake})
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a hang guard
			defer cancel()
			pids := make(chan int, 1)
			go func() {
				b, _ := os.ReadFile(fifo) // until the helper has written the pid and closed
				pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
				pids <- pid
				if tc.timeout {
					if fake.BlockUntil(ctx, 1) == nil {
						fake.Advance(500 * time.Millisecond)
					}
				}
			}()
			res := e.runCtx(t, ctx, "run_command", m{"argv": []string{exe}, "timeout_ms": 500})
			checkResult(t, res, tc.ok, tc.out)
			pid := <-pids
			if pid <= 0 {
				t.Fatal("the helper did not say its child's pid")
			}
			if st := liveness(pid); st != "" {
				t.Errorf("the helper's child %d still runs after run_command returned: %s", pid, st)
			}
		})
	}
}

// liveness is "" when pid is gone, a zombie, exiting (PF_EXITING in its
// flags) or has SIGKILL pending; else its /proc stat line. A killed
// process is one of those the moment kill returns, whatever the scheduler
// does next, so the check needs no waiting.
func liveness(pid int) string {
	st, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	i := bytes.LastIndexByte(st, ')')
	f := strings.Fields(string(st[i+1:]))
	const pfExiting = 0x4
	if len(f) > 6 {
		if f[0] == "Z" || f[0] == "X" {
			return ""
		}
		if flags, err := strconv.ParseUint(f[6], 10, 64); err == nil && flags&pfExiting != 0 {
			return ""
		}
	}
	status, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "ShdPnd:"); ok {
			if mask, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64); err == nil && mask&(1<<(syscall.SIGKILL-1)) != 0 {
				return ""
			}
		}
	}
	return string(st)
}
