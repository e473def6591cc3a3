//go:build unix

package hook

import (
	"os/exec"
	"syscall"
)

// setProcessGroup makes the hook lead a process group of its own, so that
// killing the group reaches everything it started.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// killGroup kills the process group led by pid; harmless when it is gone.
func killGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
