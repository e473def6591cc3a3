package citest

import "testing"

func TestIsCI(t *testing.T) {
	for ci, want := range map[string]bool{"": false, "false": false, "0": false, "true": true, "1": true, "yes": true} {
		if got := IsCI(ci); got != want {
			t.Errorf("IsCI(%q) = %v, want %v", ci, got, want)
		}
	}
}
