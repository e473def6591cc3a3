// Package rapidchecks sets how many cases a rapid property test draws, so
// an expensive property can run deep without the race detector and
// shallower under it, while a count the user chose (-rapid.checks or
// RAPID_CHECKS) or -short always wins.
package rapidchecks

import (
	"flag"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// chosen reports whether the user chose rapid's check count. It is settled
// once, before Use sets the flag itself (which flag.Visit would then report
// as set).
var chosen = sync.OnceValue(func() bool {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "rapid.checks" })
	_, env := os.LookupEnv("RAPID_CHECKS")
	return set || env
})

// Use sets rapid's check count to n for the rest of test t (restoring it
// when t ends), unless -short or the user chose a count. Tests that call it
// must not run in parallel with other rapid tests of the package.
func Use(t *testing.T, n int) {
	f := flag.Lookup("rapid.checks")
	if testing.Short() || f == nil || chosen() {
		return
	}
	old := f.Value.String()
	if err := flag.Set("rapid.checks", strconv.Itoa(n)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = flag.Set("rapid.checks", old) })
}

// Pick is plain without the race detector and race under it.
func Pick(plain, race int) int {
	if RaceEnabled {
		return race
	}
	return plain
}

// HeavyUnderRace skips t under the race detector. It is for tests named
// Heavy...: single-goroutine work (exhaustive enumerations, huge inputs)
// that the race detector makes many times slower without finding anything
// more. The test command (.ci/test) runs them without -race in its first stage
// (-run '...|Heavy'), so a test that calls it must have Heavy in its
// name (it fails otherwise: it would run nowhere) and its package must be in
// that stage's list.
func HeavyUnderRace(t *testing.T) {
	t.Helper()
	if !strings.Contains(t.Name(), "Heavy") {
		t.Fatalf("%s calls HeavyUnderRace but lacks Heavy in its name: the test command runs it only under -race, where it is skipped", t.Name())
	}
	if RaceEnabled {
		t.Skip("costly under the race detector and single-goroutine: the test command (.ci/test) runs it without -race")
	}
}
