//go:build race

package rapidchecks

// RaceEnabled reports that the binary runs under the race detector, which
// makes each check several times slower.
const RaceEnabled = true
