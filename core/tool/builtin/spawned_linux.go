package builtin

import (
	"bytes"
	"os"
	"strconv"
)

// maxAncestors bounds the walk up the process tree.
const maxAncestors = 64

// SpawnedByAgent reports whether an agent's tool or hook started this
// process, directly or through any number of processes between, however
// they exec'd. It is true when
//
//   - AgentSpawnedEnv is set here;
//   - some ancestor process started with it (the kernel keeps the initial
//     environment in /proc/PID/environ), so a shell that unset it is still
//     found; or
//   - some ancestor process is an openmax itself (see isOpenmax). This is
//     what an exec cannot hide: `env -u`, `sh -c 'unset ...; exec openmax'`
//     or any chain of execs replaces a process's environment, never the
//     parent that started it. An openmax that runs tools, hooks or codex
//     is the ancestor of everything they start, and no openmax starts
//     another openmax on a human's behalf.
//
// A process that left the tree while openmax runs (daemonized, re-parented
// after its parent exited) stays in it: openmax is the child subreaper of
// what it starts (see the reaper in internal/reaper), so such a process is
// re-parented to openmax, not to init.
func SpawnedByAgent() bool {
	if os.Getenv(AgentSpawnedEnv) != "" {
		return true
	}
	self := selfIdentity()
	mark := []byte(AgentSpawnedEnv + "=")
	pid := os.Getppid()
	for i := 0; i < maxAncestors && pid > 1; i++ {
		if self.isOpenmax(pid) {
			return true
		}
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

// identity is what tells an openmax process from others: its command name
// (the kernel's comm, the executable's base name cut to 15 bytes, which a
// descendant cannot change) and, when readable, its executable file.
type identity struct {
	comm string
	exe  os.FileInfo
}

// selfIdentity is this process's identity.
func selfIdentity() identity {
	id := identity{comm: commOf(os.Getpid())}
	if fi, err := os.Stat("/proc/self/exe"); err == nil {
		id.exe = fi
	}
	return id
}

// isOpenmax reports whether pid runs openmax: its command name is
// "openmax" or this process's own (an openmax installed under another
// name), or it runs the same executable file as this process (readable
// only for root or a dumpable process; a hardened openmax is not).
func (id identity) isOpenmax(pid int) bool {
	if c := commOf(pid); c != "" && (c == "openmax" || c == id.comm) {
		return true
	}
	if id.exe == nil {
		return false
	}
	fi, err := os.Stat("/proc/" + strconv.Itoa(pid) + "/exe")
	return err == nil && os.SameFile(fi, id.exe)
}

// statFields is the fields of /proc/PID/stat after the command name, and
// the command name: "pid (comm) state ppid ..." where comm may hold spaces
// and parentheses, so it ends at the last ')'.
func statFields(pid int) (comm string, fields [][]byte) {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "", nil
	}
	open, end := bytes.IndexByte(stat, '('), bytes.LastIndexByte(stat, ')')
	if open < 0 || end < open {
		return "", nil
	}
	return string(stat[open+1 : end]), bytes.Fields(stat[end+1:])
}

// commOf is the command name of pid, "" when it cannot be read.
func commOf(pid int) string {
	comm, _ := statFields(pid)
	return comm
}

// parentOf is the parent process id of pid, 0 when it cannot be read.
func parentOf(pid int) int {
	_, fields := statFields(pid)
	if len(fields) < 2 {
		return 0
	}
	ppid, err := strconv.Atoi(string(fields[1]))
	if err != nil {
		return 0
	}
	return ppid
}
