package mode

import (
	"strings"
	"testing"
)

func envOf(kv map[string]string) func(string) string {
	return func(k string) string { return kv[k] }
}

// TestResolve: an explicit mode wins, then OPENMAX_RECORD_MODE, then the
// default: replay under CI=true, once elsewhere.
func TestResolve(t *testing.T) {
	for _, tt := range []struct {
		name     string
		explicit Mode
		env      map[string]string
		want     Mode
		why      string
		err      string
	}{
		{"default", "", nil, Once, "the default", ""},
		{"CI", "", map[string]string{"CI": "true"}, Replay, "CI=true", ""},
		{"CI=1", "", map[string]string{"CI": "1"}, Replay, "CI=true", ""},
		{"CI=false", "", map[string]string{"CI": "false"}, Once, "the default", ""},
		{"explicit under CI", Missing, map[string]string{"CI": "true"}, Missing, "explicit", ""},
		{"env", "", map[string]string{Env: " Refresh ", "CI": "true"}, Refresh, Env, ""},
		{"explicit over env", Replay, map[string]string{Env: "refresh"}, Replay, "explicit", ""},
		{"bad env", "", map[string]string{Env: "sometimes"}, "", "", `unknown record mode "sometimes"`},
		{"bad explicit", "record", nil, "", "", "want replay, once, missing, refresh"},
	} {
		m, why, err := Resolve(tt.explicit, envOf(tt.env))
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%s: err %v, want %q", tt.name, err, tt.err)
			}
			continue
		}
		if err != nil || m != tt.want || !strings.Contains(why, tt.why) {
			t.Errorf("%s: %q (%s), %v; want %q (%s)", tt.name, m, why, err, tt.want, tt.why)
		}
	}
}

// TestRecords: which modes touch the network, with the cassette there or
// not.
func TestRecords(t *testing.T) {
	for _, tt := range []struct {
		m                Mode
		missing, present bool
	}{
		{Replay, false, false}, {Once, true, false}, {Missing, true, true}, {Refresh, true, true},
	} {
		if tt.m.Records(false) != tt.missing || tt.m.Records(true) != tt.present {
			t.Errorf("%s: Records(false)=%v Records(true)=%v", tt.m, tt.m.Records(false), tt.m.Records(true))
		}
	}
}

// TestHelpListsEveryMode: the help and the names come from the one table.
func TestHelpListsEveryMode(t *testing.T) {
	for _, m := range All() {
		if !strings.Contains(Help(), string(m)+" ") || !strings.Contains(Names(), string(m)) || m.Describe() == "not a mode" || !m.Valid() {
			t.Errorf("mode %s is missing from the help or names", m)
		}
	}
}

// TestPassthrough: a name matches on any port, a host:port only on it, a
// URL by its host; case does not matter.
func TestPassthrough(t *testing.T) {
	var p Passthrough
	for _, h := range []string{"LocalHost", "127.0.0.1:8080", "https://auth.example.com/token"} {
		if err := p.Add(h); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Add("  "); err == nil {
		t.Error("an empty host was accepted")
	}
	for host, want := range map[string]bool{
		"localhost:1234": true, "localhost": true, "127.0.0.1:8080": true, "127.0.0.1:8081": false,
		"auth.example.com": true, "auth.example.com:443": true, "api.openai.com": false,
	} {
		if got := p.Match(host); got != want {
			t.Errorf("Match(%q) = %v, want %v", host, got, want)
		}
	}
}
