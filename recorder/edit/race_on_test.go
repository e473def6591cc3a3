//go:build race

package edit

const raceEnabled = true
