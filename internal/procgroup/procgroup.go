// Package procgroup runs a child process as the leader of a process group
// of its own, so that killing the group reaches everything the child
// started: the one way the built-in run_command, the external tools and
// the hooks start, bound and kill the programs they run.
package procgroup

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// DrainWait is how long Run waits, once the process has exited and its
// group been killed, for its output pipe to close (a process that left the
// group may still hold it open).
const DrainWait = 2 * time.Second

// Options bound a Run.
type Options struct {
	// Timeout is how long the process may run, as Sleep measures it.
	Timeout time.Duration
	// Sleep waits d on the caller's clock (an injectable one in tests,
	// such as clock.Sleeper's), returning early with ctx's error when ctx
	// ends; nil waits on the wall clock.
	Sleep func(ctx context.Context, d time.Duration) error
}

// Ending is why Run stopped waiting for the process.
type Ending int

const (
	// Exited: the process ended by itself.
	Exited Ending = iota
	// TimedOut: the timeout passed and the group was killed.
	TimedOut
	// Cancelled: ctx ended and the group was killed.
	Cancelled
)

// Result is what came of a Run that started its process.
type Result struct {
	Ending Ending
	// Err is what cmd.Wait returned.
	Err error
}

// Run runs cmd with its stdout and stderr together on one pipe, copied to
// out. cmd leads a process group of its own and, on Linux, carries the
// parent-death signal (StartLocked). Run waits until the process exits, the
// timeout passes or ctx ends; in the last two cases the group is killed.
// Once the process has exited its group is killed in any case (whatever it
// left running goes too, so nothing holds the pipe), and the output is
// waited for at most DrainWait more. The error is that of starting it (the
// pipe or cmd.Start); out is written to only until Run returns.
func Run(ctx context.Context, cmd *exec.Cmd, out io.Writer, o Options) (Result, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return Result{}, err
	}
	cmd.Stdout, cmd.Stderr = w, w
	Setup(cmd, true)
	exited, err := StartLocked(cmd)
	w.Close()
	if err != nil {
		r.Close()
		return Result{}, err
	}
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		_, _ = io.Copy(out, r)
	}()

	sleep := o.Sleep
	if sleep == nil {
		sleep = wallSleep
	}
	waitCtx, stopWait := context.WithCancel(context.Background())
	defer stopWait()
	timedOut := make(chan struct{})
	go func() {
		if sleep(waitCtx, o.Timeout) == nil {
			close(timedOut)
		}
	}()
	var res Result
	select {
	case res.Err = <-exited:
	case <-timedOut:
		res.Ending = TimedOut
		Kill(cmd.Process)
		res.Err = <-exited
	case <-ctx.Done():
		res.Ending = Cancelled
		Kill(cmd.Process)
		res.Err = <-exited
	}
	Kill(cmd.Process)
	drainTimer := time.NewTimer(DrainWait)
	defer drainTimer.Stop()
	select {
	case <-drained:
	case <-drainTimer.C:
		r.Close()
		<-drained
	}
	r.Close()
	return res, nil
}

// StartLocked starts cmd on a goroutine locked to its OS thread, which
// then waits for it and sends what Wait returned on the channel. Linux's
// parent-death signal (Setup) belongs to the thread that started the
// process, not to the process that did: the locked thread lives as long as
// the command, so the signal fires when openmax dies, not when Go happens
// to retire a thread.
func StartLocked(cmd *exec.Cmd) (<-chan error, error) {
	started := make(chan error, 1)
	exited := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		exited <- cmd.Wait()
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	return exited, nil
}

// SearchPath finds name in the PATH of env (the child's environment, not
// this process's): the first regular, executable file in an absolute
// directory of it (relative entries are skipped). prog is "" when there is
// none; path is the PATH searched, for the caller's error.
func SearchPath(name string, env []string) (prog, path string) {
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	for _, d := range filepath.SplitList(path) {
		if d == "" || !filepath.IsAbs(d) {
			continue
		}
		p := filepath.Join(d, name)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return p, path
		}
	}
	return "", path
}

// wallSleep waits d on the wall clock, or until ctx ends.
func wallSleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return ctx.Err()
	}
}
