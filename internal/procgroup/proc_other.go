//go:build !unix

package procgroup

import (
	"os"
	"os/exec"
)

// Setup does nothing where there are no process groups.
func Setup(cmd *exec.Cmd, parentDeath bool) {}

// Kill kills p itself where there are no process groups; what it started
// may survive it. It does nothing for a nil p.
func Kill(p *os.Process) {
	if p != nil {
		_ = p.Kill()
	}
}
