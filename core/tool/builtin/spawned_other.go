//go:build !linux

package builtin

import "os"

// SpawnedByAgent reports whether an agent's tool started this process:
// AgentSpawnedEnv is set. (On Linux the environments ancestor processes
// started with are checked too.)
func SpawnedByAgent() bool { return os.Getenv(AgentSpawnedEnv) != "" }
