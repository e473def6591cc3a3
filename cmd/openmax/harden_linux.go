package main

import "syscall"

// prSetDumpable is prctl's PR_SET_DUMPABLE option.
const prSetDumpable = 4

// harden makes the process non-dumpable: its /proc/PID files (environ,
// mem, ...) become readable by root only and other processes of the same
// user cannot ptrace it. So a command a tool runs as the same user cannot
// read the provider API key out of /proc/<openmax>/environ. Children are
// unaffected (execve resets the flag). Best effort: a failure leaves the
// process as it was.
func harden() {
	_, _, _ = syscall.RawSyscall(syscall.SYS_PRCTL, prSetDumpable, 0, 0)
}
