//go:build unix && !linux

package builtin

import (
	"os"
	"os/exec"
	"syscall"
)

// setProcessGroup makes the command lead a process group of its own, so
// that killing it reaches everything it started. There is no parent-death
// signal here: a command outlives an openmax killed by SIGKILL.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// killProcessGroup kills the command's process group. It is harmless when
// the group is gone.
func killProcessGroup(p *os.Process) {
	_ = syscall.Kill(-p.Pid, syscall.SIGKILL)
}
