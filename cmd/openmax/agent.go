package main

import (
	"os"
	"slices"
	"sync"

	"github.com/openmax/openmax/core/tool/builtin"
)

// agentEnv is the environment lookup of this process, which reports the
// agent marker set when an agent's tool started it (builtin.SpawnedByAgent,
// which also sees through a shell that unset the marker), so everything
// that refuses agent-spawned callers (approval_mode, trust, --approve)
// does. For a command that can ask (eager), the walk up the process tree
// starts at once, on its own goroutine, so it sees the parents as they were
// when this process started (a parent that exits later cannot hide it)
// without holding up the start; the first lookup of the marker waits for
// it. Other commands walk only if they ever ask.
func agentEnv(eager bool) func(string) string {
	spawned := sync.OnceValue(builtin.SpawnedByAgent)
	if eager {
		go spawned()
	}
	return func(key string) string {
		if key == builtin.AgentSpawnedEnv && spawned() {
			return "1"
		}
		return os.Getenv(key)
	}
}

// asksAgentMarker reports whether the command args name can consult the
// agent marker: the harness run live (--stdio, -p, record) refuses an
// approval_mode, trust and --approve refuse a human's decision. The
// commands below never do (replay gives its harness a recorded, empty
// environment), so they skip the walk up the process tree at start: it
// was a tenth of a short replay's CPU.
func asksAgentMarker(args []string) bool {
	if len(args) == 0 {
		return true
	}
	switch args[0] {
	case "version", "--version", "help", "-h", "--help", "--check", "--spec",
		"view", "replay", "cassette", "report", "fake-provider", "fake-app-server":
		return false // (--check or --spec later in the line: eager, which is only slower)
	case "record":
		// A recording proxy runs no harness: it forwards whatever its
		// clients send. (A --proxy the parser would not take: eager.)
		return !slices.Contains(args[1:], "--proxy")
	}
	return true
}
