//go:build unix && !linux

package procgroup

import (
	"os"
	"os/exec"
	"syscall"
)

// Setup makes cmd lead a process group of its own, so that Kill reaches
// everything it started. There is no parent-death signal here (parentDeath
// is ignored): a process outlives an openmax killed by SIGKILL.
func Setup(cmd *exec.Cmd, parentDeath bool) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// Kill SIGKILLs the process group p leads. It is harmless when the group
// is gone, and does nothing for a nil p (a process never started).
func Kill(p *os.Process) {
	if p != nil {
		_ = syscall.Kill(-p.Pid, syscall.SIGKILL)
	}
}
