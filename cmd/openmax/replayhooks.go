package main

import (
	"fmt"
	"os"

	"github.com/openmax/openmax/core"
	"github.com/openmax/openmax/core/harness"
)

// loadLiveHooks loads the hooks `openmax replay --live-hooks DIR` runs: the
// project hook file under dir (not the user's), nil for an empty dir. A
// directory whose hook file defines no hook is a mistake worth saying.
func loadLiveHooks(dir string) (core.Hooks, error) {
	if dir == "" {
		return nil, nil
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("--live-hooks %s: not a directory", dir)
	}
	hooks := harness.LoadHooks(dir, "", nil)
	if hooks == nil {
		return nil, fmt.Errorf("--live-hooks %s: no hooks in %s/.openmax/hooks.json", dir, dir)
	}
	return hooks, nil
}
