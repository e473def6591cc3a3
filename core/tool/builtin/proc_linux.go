package builtin

import (
	"os"
	"os/exec"
	"syscall"
)

// setProcessGroup makes the command lead a process group of its own, so
// that killing it reaches everything it started, and asks the kernel to
// SIGKILL it when openmax dies, even by a signal nothing can catch.
//
// The parent-death signal belongs to the thread that started the command,
// not the process: run_command starts and waits for it on a goroutine
// locked to its OS thread, so that thread lives as long as the command.
// It reaches the command itself only: what that started is orphaned, not
// killed, when openmax dies by SIGKILL (a cancel, timeout or exit still kills
// the whole group).
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// killProcessGroup kills the command's process group. It is harmless when
// the group is gone.
func killProcessGroup(p *os.Process) {
	_ = syscall.Kill(-p.Pid, syscall.SIGKILL)
}
