//go:build race

package recorder

// raceEnabled: the race detector slows the child process of the crash test
// several times over; it runs fewer kills then.
const raceEnabled = true
