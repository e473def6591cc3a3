package procgroup

import (
	"os"
	"os/exec"
	"syscall"
)

// Setup makes cmd lead a process group of its own, so that Kill reaches
// everything it started. With parentDeath the kernel also SIGKILLs the
// process when openmax dies, even by a signal nothing can catch; that
// signal belongs to the thread that starts the process, so start it with
// StartLocked. It reaches the process itself only: what that started is
// orphaned, not killed, when openmax dies by SIGKILL (a cancel, timeout or
// exit still kills the whole group).
func Setup(cmd *exec.Cmd, parentDeath bool) {
	attr := &syscall.SysProcAttr{Setpgid: true}
	if parentDeath {
		attr.Pdeathsig = syscall.SIGKILL
	}
	cmd.SysProcAttr = attr
}

// Kill SIGKILLs the process group p leads. It is harmless when the group
// is gone, and does nothing for a nil p (a process never started).
func Kill(p *os.Process) {
	if p != nil {
		_ = syscall.Kill(-p.Pid, syscall.SIGKILL)
	}
}
