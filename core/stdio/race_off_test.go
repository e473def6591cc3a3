//go:build !race

package stdio_test

// raceEnabled: the tests run without the race detector.
const raceEnabled = false
