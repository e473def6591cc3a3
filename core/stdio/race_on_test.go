//go:build race

package stdio_test

// raceEnabled: the tests run under the race detector, which makes each
// random session about ten times dearer.
const raceEnabled = true
