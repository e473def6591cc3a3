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
// does. The walk up the process tree is made the first time the marker is
// looked up, not at every start: most commands never ask.
func agentEnv() func(string) string {
	spawned := sync.OnceValue(builtin.SpawnedByAgent)
	return func(key string) string {
		if key == builtin.AgentSpawnedEnv && spawned() {
			return "1"
		}
		return os.Getenv(key)
	}
}
