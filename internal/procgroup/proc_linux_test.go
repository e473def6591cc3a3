package procgroup_test

import (
	"os/exec"
	"syscall"
	"testing"

	"github.com/openmax/openmax/internal/procgroup"
)

func TestSetupParentDeath(t *testing.T) {
	for _, tc := range []struct {
		parentDeath bool
		want        syscall.Signal
	}{{true, syscall.SIGKILL}, {false, 0}} {
		cmd := exec.Command("true")
		procgroup.Setup(cmd, tc.parentDeath)
		if a := cmd.SysProcAttr; a == nil || !a.Setpgid || a.Pdeathsig != tc.want {
			t.Errorf("Setup(%v): %+v", tc.parentDeath, a)
		}
	}
}
