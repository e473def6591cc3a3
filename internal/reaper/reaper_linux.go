package reaper

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"syscall"
	"unsafe"
)

// Linux constants the syscall package does not name.
const (
	prSetChildSubreaper = 36  // prctl PR_SET_CHILD_SUBREAPER
	sysPidfdOpen        = 434 // pidfd_open, the same number on every architecture
	pPidfd              = 3   // waitid's P_PIDFD
	wExited             = 4   // waitid's WEXITED
	wStopped            = 2   // waitid's WSTOPPED
	wContinued          = 8   // waitid's WCONTINUED
	wNowait             = 0x1000000
	pAll                = 0 // waitid's P_ALL
)

// Reaper reaps the orphans this process adopted as their subreaper.
//
// Concurrency: one goroutine, started by Enable, does all the reaping;
// Stop may be called from any goroutine, once.
type Reaper struct {
	sig  chan os.Signal
	quit chan struct{}
	done chan struct{}
	once sync.Once
}

// Enable makes this process the child subreaper of its descendants and
// starts reaping the orphans it adopts (at every SIGCHLD). It fails, and
// changes nothing, where Go does not wait for its children through pidfds
// (the reaper could then not tell an adopted orphan from a child whose
// Cmd.Wait is pending) or where prctl refuses.
func Enable() (*Reaper, error) {
	if err := pidfdsWork(); err != nil {
		return nil, fmt.Errorf("reaper: pidfds do not work here: %w", err)
	}
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); errno != 0 {
		return nil, fmt.Errorf("reaper: PR_SET_CHILD_SUBREAPER: %w", errno)
	}
	r := &Reaper{sig: make(chan os.Signal, 1), quit: make(chan struct{}), done: make(chan struct{})}
	signal.Notify(r.sig, syscall.SIGCHLD)
	go r.loop()
	return r, nil
}

// Stop stops reaping. With killOrphans, every adopted orphan still running
// is killed with SIGKILL (and reaped), so nothing a tool daemonized
// outlives this process and escapes to init.
func (r *Reaper) Stop(killOrphans bool) {
	if r == nil {
		return
	}
	r.once.Do(func() {
		signal.Stop(r.sig)
		close(r.quit)
		<-r.done
		if killOrphans {
			for _, pid := range adopted(false) {
				_ = syscall.Kill(pid, syscall.SIGKILL)
				var ws syscall.WaitStatus
				_, _ = syscall.Wait4(pid, &ws, 0, nil)
			}
		}
	})
}

func (r *Reaper) loop() {
	defer close(r.done)
	for {
		select {
		case <-r.quit:
			return
		case <-r.sig:
			reapZombies()
		}
	}
}

// reapZombies reaps every adopted orphan that has exited.
func reapZombies() {
	for _, pid := range adopted(true) {
		var ws syscall.WaitStatus
		if got, err := syscall.Wait4(pid, &ws, syscall.WNOHANG, nil); err == nil && got == pid && reaped != nil {
			reaped(pid)
		}
	}
}

// reaped, when set (by tests, before Enable), hears of every orphan reaped.
var reaped func(pid int)

// adopted lists this process's children that no pidfd of this process
// refers to (children os/exec did not start: adopted orphans), only the
// exited ones (zombies) when zombies is set. The children are listed
// before the pidfds are, so a child os/exec starts meanwhile, whose pidfd
// the list may miss, is not among them.
func adopted(zombies bool) []int {
	if !hasChildren() {
		return nil // most runs start no process: one syscall, not a /proc scan
	}
	kids := children(zombies)
	if len(kids) == 0 {
		return nil
	}
	owned := pidfdPids()
	out := kids[:0]
	for _, pid := range kids {
		if !owned[pid] {
			out = append(out, pid)
		}
	}
	return out
}

// hasChildren reports whether this process has a child, running or
// exited: waitid(P_ALL, WNOHANG|WNOWAIT) fails with ECHILD only when it has
// none at all (it reaps nothing). On any other answer it says yes, and the
// caller looks.
func hasChildren() bool {
	var info [128]byte // siginfo_t
	_, _, errno := syscall.Syscall6(syscall.SYS_WAITID, pAll, 0, uintptr(unsafe.Pointer(&info[0])),
		wExited|wStopped|wContinued|syscall.WNOHANG|wNowait, 0, 0)
	return errno != syscall.ECHILD
}

// children lists the processes whose parent is this one (only zombies,
// when zombies is set), from /proc/self/task/*/children where the kernel
// has it, else by reading every /proc/PID/stat.
func children(zombies bool) []int {
	self := os.Getpid()
	var pids []int
	tasks, _ := os.ReadDir("/proc/self/task") // not filepath.Glob: this runs at every exit
	listed := false
	for _, t := range tasks {
		b, err := os.ReadFile("/proc/self/task/" + t.Name() + "/children")
		if err != nil {
			continue
		}
		listed = true
		for _, field := range bytes.Fields(b) {
			if pid, err := strconv.Atoi(string(field)); err == nil {
				pids = append(pids, pid)
			}
		}
	}
	if !listed {
		entries, _ := os.ReadDir("/proc")
		for _, e := range entries {
			if pid, err := strconv.Atoi(e.Name()); err == nil {
				pids = append(pids, pid)
			}
		}
	}
	out := pids[:0]
	for _, pid := range pids {
		ppid, state, ok := stat(pid)
		if ok && ppid == self && (!zombies || state == 'Z') {
			out = append(out, pid)
		}
	}
	return out
}

// stat reads the parent and the state of pid from /proc/PID/stat.
func stat(pid int) (ppid int, state byte, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, false
	}
	// "pid (comm) state ppid ...": comm may hold spaces and ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, false
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 2 || len(f[0]) != 1 {
		return 0, 0, false
	}
	ppid, err = strconv.Atoi(string(f[1]))
	return ppid, f[0][0], err == nil
}

// pidfdPids is the set of processes this process holds a pidfd of (the
// "Pid:" line of /proc/self/fdinfo/FD).
func pidfdPids() map[int]bool {
	owned := map[int]bool{}
	entries, _ := os.ReadDir("/proc/self/fdinfo")
	for _, e := range entries {
		b, err := os.ReadFile("/proc/self/fdinfo/" + e.Name())
		if err != nil {
			continue
		}
		for _, line := range bytes.Split(b, []byte{'\n'}) {
			if v, ok := bytes.CutPrefix(line, []byte("Pid:")); ok {
				if pid, err := strconv.Atoi(string(bytes.TrimSpace(v))); err == nil && pid > 0 {
					owned[pid] = true
				}
			}
		}
	}
	return owned
}

// pidfdsWork checks what os uses to decide it waits through pidfds:
// pidfd_open, and waitid(P_PIDFD) answering ECHILD for a process that is
// not our child.
func pidfdsWork() error {
	fd, _, errno := syscall.Syscall(sysPidfdOpen, uintptr(os.Getpid()), 0, 0)
	if errno != 0 {
		return fmt.Errorf("pidfd_open: %w", errno)
	}
	defer syscall.Close(int(fd))
	var info [128]byte // siginfo_t
	_, _, errno = syscall.Syscall6(syscall.SYS_WAITID, pPidfd, fd, uintptr(unsafe.Pointer(&info[0])), wExited|syscall.WNOHANG, 0, 0)
	if !errors.Is(errno, syscall.ECHILD) {
		return fmt.Errorf("waitid(P_PIDFD): %v", errno)
	}
	return nil
}
