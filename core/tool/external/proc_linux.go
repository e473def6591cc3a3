package external

import (
	"os"
	"os/exec"
	"syscall"
)

// setProcessGroup makes the tool lead a process group of its own, so that
// killing it reaches everything it started, and has the kernel SIGKILL it
// when the thread that started it ends (Run keeps that thread locked for
// the tool's life), so an openmax killed by SIGKILL takes it along.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// killProcessGroup kills the tool's process group; harmless once it is gone.
func killProcessGroup(p *os.Process) {
	_ = syscall.Kill(-p.Pid, syscall.SIGKILL)
}
