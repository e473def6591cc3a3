package jsonnum

import "testing"

func TestCanon(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"1", "1"}, {"1.0", "1"}, {"1e0", "1"}, {"10E-1", "1"}, {"-0", "0"}, {"-0.0e5", "0"},
		{"0.5", "0.5"}, {"5E-1", "0.5"}, {"100", "100"}, {"1e2", "100"}, {"-1.50", "-1.5"},
		{"12345678901234567890", "12345678901234567890"},
		{"1e20", "100000000000000000000"}, {"1e21", "1e21"}, {"10e21", "1e22"}, {"1e-22", "1e-22"},
		{"1e99999999999999", "1e99999999999999"}, // an exponent out of range stays as it is
		{"abc", "abc"},
	} {
		if got := Canon(tt.in); got != tt.want {
			t.Errorf("Canon(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
