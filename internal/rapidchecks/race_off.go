//go:build !race

package rapidchecks

// RaceEnabled reports that the binary runs under the race detector.
const RaceEnabled = false
