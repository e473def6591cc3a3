package main

import "runtime"

// A replay runs on one P.
//
// A replay at instant pace is a chain of handoffs, each goroutine waiting
// for the one before it: the recorded client's command, the server, the
// turn, the transport serving the recorded reply, the events back to the
// client. With several Ps every handoff that makes a goroutine runnable
// wakes an idle P's thread (a futex), which spins looking for work and
// sleeps again; on 2 cores that was a quarter of a 100-turn replay's CPU
// time (perf: findRunnable, futex, stopm) and no gain in wall time, since
// nothing ran beside the chain. On one P the handoffs are a goroutine
// switch. Loading the cassette, which reads a large file on every core
// (recorder/cassette's fastsplit.go), comes before and keeps them all.

// replayOnOneProc sets GOMAXPROCS to 1 for the replays of `openmax
// replay` and returns what puts the setting back. It changes nothing for
// a test's in-process run (e.replayProcs unset: the setting is the whole
// process's) or when the environment sets GOMAXPROCS, whose reading by
// the runtime then stands.
func replayOnOneProc(e env) (restore func()) {
	if !e.replayProcs || e.env("GOMAXPROCS") != "" {
		return func() {}
	}
	prev := runtime.GOMAXPROCS(1)
	return func() { runtime.GOMAXPROCS(prev) }
}
