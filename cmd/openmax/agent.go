package main

import (
	"os"
	"sync"

	"github.com/openmax/openmax/core/tool/builtin"
)

// agentEnv is the environment lookup of this process, which reports the
// agent marker set when an agent's tool started it (builtin.SpawnedByAgent,
// which also sees through a shell that unset the marker), so everything
// that refuses agent-spawned callers (approval_mode, trust, --approve)
// does. The walk up the process tree starts at once, on its own goroutine,
// so it sees the parents as they were when this process started (a parent
// that exits later cannot hide it) without holding up the start; the first
// lookup of the marker waits for it.
func agentEnv() func(string) string {
	spawned := sync.OnceValue(builtin.SpawnedByAgent)
	go spawned()
	return func(key string) string {
		if key == builtin.AgentSpawnedEnv && spawned() {
			return "1"
		}
		return os.Getenv(key)
	}
}
