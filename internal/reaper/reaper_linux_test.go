package reaper

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// One reaper for the test process: a subreaper cannot be half undone.
var (
	reapedMu sync.Mutex
	reapedCh = map[int]chan struct{}{}
	enabled  *Reaper
)

func TestMain(m *testing.M) {
	reaped = func(pid int) {
		reapedMu.Lock()
		ch := reapedCh[pid]
		delete(reapedCh, pid) // pids are reused: one close per registration
		reapedMu.Unlock()
		if ch != nil {
			close(ch)
		}
	}
	r, err := Enable()
	if err != nil {
		os.Stderr.WriteString("reaper: " + err.Error() + "\n")
		os.Exit(1)
	}
	enabled = r
	os.Exit(m.Run())
}

// orphan starts a shell that leaves a background child behind and exits;
// the child runs until release is called (it reads a pipe to EOF). It
// returns the orphan's pid once its parent has been waited for.
func orphan(t *testing.T) (pid int, release func()) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("/bin/sh", "-c", "cat <&3 >/dev/null & echo $!")
	cmd.ExtraFiles = []*os.File{r}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r.Close()
	line, _ := bufio.NewReader(out).ReadString('\n')
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the orphan's parent: %v", err)
	}
	pid, err = strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatalf("orphan pid %q: %v", line, err)
	}
	return pid, func() { w.Close() }
}

// releaseAndAwaitReap lets the orphan pid exit and waits until the
// reaper has reaped it.
func releaseAndAwaitReap(t *testing.T, pid int, release func()) {
	t.Helper()
	done := make(chan struct{})
	reapedMu.Lock()
	reapedCh[pid] = done
	reapedMu.Unlock()
	release()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // a hang guard, not a timing
	defer cancel()
	select {
	case <-done:
	case <-ctx.Done():
		t.Fatalf("orphan %d was not reaped", pid)
	}
}

// TestOrphansAreAdoptedAndReaped: a process whose parent exits is
// re-parented to this one (not init), and once it exits the reaper reaps
// it: no zombie stays behind.
func TestOrphansAreAdoptedAndReaped(t *testing.T) {
	pid, release := orphan(t)
	ppid, _, ok := stat(pid)
	if !ok || ppid != os.Getpid() {
		release()
		t.Fatalf("orphan %d has parent %d, want this process %d", pid, ppid, os.Getpid())
	}
	releaseAndAwaitReap(t, pid, release)
	if _, _, ok := stat(pid); ok {
		t.Errorf("orphan %d still in /proc after it was reaped", pid)
	}
}

// TestOwnChildrenAreNeverReaped: while orphans come and go, every child
// started through os/exec is still waited for by its own Cmd.Wait, which
// gets its real exit status (never ECHILD).
func TestOwnChildrenAreNeverReaped(t *testing.T) {
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			code := i % 3
			for range 8 {
				err := exec.Command("/bin/sh", "-c", "exit "+strconv.Itoa(code)).Run()
				got := 0
				if ee, ok := err.(*exec.ExitError); ok {
					got = ee.ExitCode()
				} else if err != nil {
					errs <- err
					return
				}
				if got != code {
					errs <- &exec.Error{Name: "exit " + strconv.Itoa(got) + ", want " + strconv.Itoa(code)}
					return
				}
			}
		}()
	}
	var releases []func()
	for range 16 {
		_, release := orphan(t)
		releases = append(releases, release)
	}
	for _, r := range releases {
		r()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestStopKillsOrphans runs last in its own process: Stop(true) kills the
// orphans still running, so none escapes to init when openmax exits.
func TestStopKillsOrphans(t *testing.T) {
	if os.Getenv("REAPER_STOP_CHILD") == "1" {
		pid, release := orphan(t)
		defer release()
		enabled.Stop(true)
		if _, _, ok := stat(pid); ok {
			t.Fatalf("orphan %d outlived Stop", pid)
		}
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestStopKillsOrphans$", "-test.v")
	cmd.Env = append(os.Environ(), "REAPER_STOP_CHILD=1")
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "PASS") {
		t.Fatalf("%v\n%s", err, out)
	}
}

// TestHasChildrenSeesEveryKindOfChild: the exit scan's shortcut says no
// only when there is no child at all: none before, yes with a child of our
// own (running, then exited and not yet waited for) and with an adopted
// orphan, none again once everything is reaped. (The package's tests run
// one at a time, and each reaps what it starts.)
func TestHasChildrenSeesEveryKindOfChild(t *testing.T) {
	if hasChildren() {
		t.Fatal("hasChildren before any child was started")
	}
	cmd := exec.Command("/bin/cat")
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if !hasChildren() {
		t.Error("hasChildren is false with a running child")
	}
	in.Close()
	// Exited but not waited for: a zombie is still a child.
	pidfd, _, errno := syscall.Syscall(sysPidfdOpen, uintptr(cmd.Process.Pid), 0, 0)
	if errno != 0 {
		t.Fatal(errno)
	}
	var info [128]byte
	_, _, errno = syscall.Syscall6(syscall.SYS_WAITID, pPidfd, pidfd, uintptr(unsafe.Pointer(&info[0])), wExited|wNowait, 0, 0)
	syscall.Close(int(pidfd))
	if errno != 0 {
		t.Fatal(errno)
	}
	if !hasChildren() {
		t.Error("hasChildren is false with an exited child not yet waited for")
	}
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	if hasChildren() {
		t.Error("hasChildren after the child was waited for")
	}

	pid, release := orphan(t)
	if !hasChildren() {
		release()
		t.Fatal("hasChildren is false with an adopted orphan running")
	}
	if got := adopted(false); !slices.Contains(got, pid) {
		t.Errorf("adopted = %v, want it to hold the orphan %d", got, pid)
	}
	releaseAndAwaitReap(t, pid, release)
	if hasChildren() {
		t.Error("hasChildren after the orphan was reaped")
	}
}
