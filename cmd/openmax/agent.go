package main

import (
	"os"

	"github.com/openmax/openmax/core/tool/builtin"
)

// agentEnv is the environment lookup of a process an agent's tool
// started (builtin.SpawnedByAgent, which also sees through a shell that
// unset the marker): it reports the marker set, so everything that
// refuses agent-spawned callers (approval_mode, trust, --approve) does.
func agentEnv() func(string) string {
	if !builtin.SpawnedByAgent() {
		return nil // os.Getenv
	}
	return func(key string) string {
		if key == builtin.AgentSpawnedEnv {
			return "1"
		}
		return os.Getenv(key)
	}
}
