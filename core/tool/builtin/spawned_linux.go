package builtin

import (
	"bytes"
	"os"
	"strconv"
)

// maxAncestors bounds the walk up the process tree.
const maxAncestors = 64

// SpawnedByAgent reports whether an agent's tool started this process,
// directly or through any number of processes between: AgentSpawnedEnv is
// set here, or was in the environment some ancestor process started with
// (as the kernel keeps it in /proc/PID/environ). A model that unsets the
// variable in its shell (`env -u`, `unset`) before starting openmax is
// still found through that shell. What it does not find is a process that
// left the tree (re-parented to init once its parent exited).
func SpawnedByAgent() bool {
	if os.Getenv(AgentSpawnedEnv) != "" {
		return true
	}
	mark := []byte(AgentSpawnedEnv + "=")
	pid := os.Getppid()
	for i := 0; i < maxAncestors && pid > 1; i++ {
		if env, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ"); err == nil {
			for _, kv := range bytes.Split(env, []byte{0}) {
				if bytes.HasPrefix(kv, mark) && len(kv) > len(mark) {
					return true
				}
			}
		}
		pid = parentOf(pid)
	}
	return false
}

// parentOf is the parent process id of pid, 0 when it cannot be read.
func parentOf(pid int) int {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	// "pid (comm) state ppid ...": comm may hold spaces and parentheses,
	// so the fields are counted from the last ')'.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0
	}
	fields := bytes.Fields(stat[i+1:])
	if len(fields) < 2 {
		return 0
	}
	ppid, err := strconv.Atoi(string(fields[1]))
	if err != nil {
		return 0
	}
	return ppid
}
