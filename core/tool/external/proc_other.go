//go:build !unix

package external

import (
	"os"
	"os/exec"
)

// setProcessGroup does nothing where there are no process groups.
func setProcessGroup(*exec.Cmd) {}

// killProcessGroup kills the tool itself where there are no process
// groups; what it started may survive it.
func killProcessGroup(p *os.Process) {
	_ = p.Kill()
}
