// Package reaper keeps what openmax's tools start inside openmax's process
// tree: it makes the process the child subreaper of its descendants, so a
// command that daemonizes (double fork, setsid -f, a parent that exits) is
// re-parented to openmax instead of init, and reaps those adopted orphans
// when they exit. That is what lets a process find out that an agent's
// tool started it by walking its parents (core/tool/builtin.SpawnedByAgent),
// however it forked.
//
// The children openmax starts itself (os/exec) are never reaped here:
// their exit status belongs to their Cmd.Wait. Only zombies that no pidfd
// of this process refers to are adopted orphans (os/exec holds a pidfd for
// every child it starts until Wait returns), so Enable refuses where Go
// cannot use pidfds, and is a no-op on systems without a subreaper.
package reaper
