// Package citest decides, for tests of any package, whether a test that
// lacks something on the machine may skip: outside CI it skips, saying
// why; under CI, which installs or has everything the tests need, the
// lack fails the test, so CI never passes with a test silently left out.
// It is for tests only.
package citest

import (
	"os"
	"testing"
)

// IsCI reports whether ci, the value of $CI, says the run is CI's (any
// value but "", "false" and "0", as CI services set it).
func IsCI(ci string) bool { return ci != "" && ci != "false" && ci != "0" }

// SkipOutsideCI skips t for want of something the machine lacks, saying
// why; under CI it fails t instead.
func SkipOutsideCI(t testing.TB, why string) {
	t.Helper()
	if IsCI(os.Getenv("CI")) {
		t.Fatal(why + "; CI must run this test")
	}
	t.Skip(why + " (skipped outside CI)")
}
