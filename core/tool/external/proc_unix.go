//go:build unix && !linux

package external

import (
	"os"
	"os/exec"
	"syscall"
)

// setProcessGroup makes the tool lead a process group of its own, so that
// killing it reaches everything it started.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// killProcessGroup kills the tool's process group; harmless once it is gone.
func killProcessGroup(p *os.Process) {
	_ = syscall.Kill(-p.Pid, syscall.SIGKILL)
}
