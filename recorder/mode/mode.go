// Package mode is the one definition of openmax's record modes: what a
// cassette-backed transport does with a request, whether the cassette is
// there or not. The CLI (`--mode` on `openmax record`, `openmax replay` and
// `openmax fake-provider --cassette`) and recorder/vcr parse a mode here,
// and the CLI's help is made from the table below, so the names and their
// meaning are the same everywhere.
//
//   - replay: serve the cassette, never touch the network; a request it
//     does not hold is a miss. The default under CI=true.
//   - once: record when the cassette does not exist, replay it when it
//     does. The default elsewhere.
//   - missing: replay what the cassette holds and send what misses to the
//     network, appending it to the cassette (crash-safe: the file loads,
//     ours and stock go-vcr, at every instant).
//   - refresh: record everything again, replacing the cassette.
//
// Passthrough hosts (Passthrough) are sent to the network as they are,
// neither served nor recorded, in every mode but replay.
//
// A mode given explicitly (a flag, an option, OPENMAX_RECORD_MODE) is
// always honoured; CI=true only changes the default, so a CI job that
// forgets a cassette fails with a miss instead of calling a live API.
package mode

import (
	"fmt"
	"net"
	"net/url"
	"strings"
)

// Mode is a record mode. The zero Mode is "not chosen": Resolve picks the
// default.
type Mode string

// The modes.
const (
	Replay  Mode = "replay"
	Once    Mode = "once"
	Missing Mode = "missing"
	Refresh Mode = "refresh"
)

// Env names the environment variable that sets the mode wherever none was
// given explicitly (OPENMAX_RECORD_MODE=missing go test ./...).
const Env = "OPENMAX_RECORD_MODE"

// CIEnv is the variable CI services set; when it is true the default mode
// is Replay.
const CIEnv = "CI"

// table is every mode with what it does, in the order help lists them.
var table = []struct {
	m    Mode
	does string
}{
	{Replay, "serve the cassette only, never touch the network (the default under CI=true)"},
	{Once, "record if the cassette is missing, else replay it (the default elsewhere)"},
	{Missing, "replay what the cassette holds, record what misses and append it"},
	{Refresh, "record everything again, replacing the cassette"},
}

// All lists the modes.
func All() []Mode {
	out := make([]Mode, len(table))
	for i, t := range table {
		out[i] = t.m
	}
	return out
}

// Describe is what m does, in a few words.
func (m Mode) Describe() string {
	for _, t := range table {
		if t.m == m {
			return t.does
		}
	}
	return "not a mode"
}

// Names is the modes' names joined with "|", for a usage line.
func Names() string {
	names := make([]string, len(table))
	for i, t := range table {
		names[i] = string(t.m)
	}
	return strings.Join(names, "|")
}

// Help is the help text of a --mode flag: every mode and what it does.
func Help() string {
	var b strings.Builder
	b.WriteString("the record mode:")
	for _, t := range table {
		fmt.Fprintf(&b, "\n  %-8s %s", t.m, t.does)
	}
	return b.String()
}

// Parse reads a mode's name (case-insensitive, spaces trimmed).
func Parse(s string) (Mode, error) {
	m := Mode(strings.ToLower(strings.TrimSpace(s)))
	for _, t := range table {
		if t.m == m {
			return m, nil
		}
	}
	return "", fmt.Errorf("unknown record mode %q (want %s)", s, strings.ReplaceAll(Names(), "|", ", "))
}

// Valid reports whether m is one of the modes.
func (m Mode) Valid() bool {
	_, err := Parse(string(m))
	return err == nil && m != ""
}

// IsCI reports whether the environment says it is CI (CI set to anything
// but "", "0" or "false").
func IsCI(getenv func(string) string) bool {
	v := strings.ToLower(strings.TrimSpace(getenv(CIEnv)))
	return v != "" && v != "0" && v != "false"
}

// Default is the mode when none is chosen: Replay under CI, else Once.
func Default(getenv func(string) string) Mode {
	if IsCI(getenv) {
		return Replay
	}
	return Once
}

// Resolve is the mode to run in: explicit when it is set, else the one
// OPENMAX_RECORD_MODE names, else Default. It says where the mode came
// from, for messages ("--mode", "OPENMAX_RECORD_MODE", "default under
// CI=true", "default").
func Resolve(explicit Mode, getenv func(string) string) (Mode, string, error) {
	if explicit != "" {
		m, err := Parse(string(explicit))
		return m, "explicit", err
	}
	if v := getenv(Env); strings.TrimSpace(v) != "" {
		m, err := Parse(v)
		if err != nil {
			return "", Env, fmt.Errorf("%s: %w", Env, err)
		}
		return m, Env, nil
	}
	if IsCI(getenv) {
		return Replay, "the default under CI=true", nil
	}
	return Once, "the default", nil
}

// Records reports whether m, on a cassette that exists or not, sends
// requests to the network (and writes the cassette).
func (m Mode) Records(exists bool) bool {
	switch m {
	case Once:
		return !exists
	case Missing, Refresh:
		return true
	}
	return false
}

// Passthrough is a set of hosts whose requests go to the network as they
// are, neither served from the cassette nor recorded.
type Passthrough []string

// Add adds a host ("api.example.com", "127.0.0.1:8080", or a URL whose
// host is taken), refusing an empty one.
func (p *Passthrough) Add(host string) error {
	h := strings.TrimSpace(host)
	if u, err := url.Parse(h); err == nil && u.Host != "" {
		h = u.Host
	}
	if h == "" {
		return fmt.Errorf("passthrough: empty host %q", host)
	}
	*p = append(*p, strings.ToLower(h))
	return nil
}

// Match reports whether a request to host (with or without a port) passes
// through: a listed name without a port matches the host on any port.
func (p Passthrough) Match(host string) bool {
	host = strings.ToLower(host)
	name := host
	if h, _, err := net.SplitHostPort(host); err == nil {
		name = h
	}
	for _, q := range p {
		if q == host || q == name {
			return true
		}
	}
	return false
}
