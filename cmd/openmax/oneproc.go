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
// (perf: findRunnable, futex, stopm) for no gain in wall time, since
// nothing ran beside the chain. On one P the handoffs are goroutine
// switches: 13% less CPU and 8% less wall time (bench/replayscale).
// Loading the cassette, which reads a large file on every core
// (recorder/cassette's fastsplit.go), comes before and keeps them all. A
// file read in one pass is loaded on one P too: giving up a P frees its
// allocation caches into the heap's span sets, whose fresh memory (page
// faults) cost ~1.4 ms once the P had allocated, more than a replay of a
// few turns saves; before the load it costs almost nothing.
//
// A live session (--stdio, -p, record) keeps every P: there a goroutine
// blocked in a system call (the session store's fsync, a write to a slow
// pipe) holds its P until the runtime's monitor takes it back, and with
// one P nothing else runs meanwhile. Measured: a 2M-token reply streamed
// 8% faster on one P, but recording's time to first token rose 0.1-0.25
// ms at the median and its slow turns (>4 ms) in a 300-turn session from
// 28 to 47.

// onOneProc sets GOMAXPROCS to 1 and returns what puts the setting back.
// It changes nothing for a test's in-process run (e.oneProc unset: the
// setting is the whole process's) or when the environment sets
// GOMAXPROCS, whose reading by the runtime then stands.
func onOneProc(e env) (restore func()) {
	if !e.oneProc || e.env("GOMAXPROCS") != "" {
		return func() {}
	}
	prev := runtime.GOMAXPROCS(1)
	return func() { runtime.GOMAXPROCS(prev) }
}
