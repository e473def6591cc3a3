package replay

import (
	"fmt"
	"net/url"
	"strings"
)

// MatchConfig is the part of Options that a user sets from the command
// line. `openmax replay` and `openmax fake-provider --cassette` register
// the same flags for it, so a request matches the same way under both.
type MatchConfig struct {
	// Ignore adds body paths to drop before comparing (see Options.Ignore).
	Ignore []string
	// NoDefaults turns off DefaultIgnore and the default normalisation of
	// volatile text (see Options.NoDefaults).
	NoDefaults bool
}

// Apply sets o's matching fields from c: its paths are added to
// o.Ignore and NoDefaults is set when c asks for it.
func (c MatchConfig) Apply(o *Options) {
	o.Ignore = append(o.Ignore, c.Ignore...)
	o.NoDefaults = o.NoDefaults || c.NoDefaults
}

// Event is one request a Replayer or Handler answered, as
// Options.OnRequest reports it. Requests and interactions are numbered
// from 0: requests in the order they arrived, interactions in cassette
// order.
type Event struct {
	Request int
	Method  string
	URL     string // after Options.Scrub
	// Interaction is the recorded interaction served, -1 when none was.
	Interaction int
	// Status is the served interaction's recorded status, 0 when it got
	// no response (a recorded transport failure) or none was served.
	Status int
	// Miss is set when no unserved interaction matched.
	Miss *MissError
	// Fallback is set with Miss when the request went to
	// Options.Fallback (the network, under record mode missing) instead
	// of being answered as a miss.
	Fallback bool
	// Err is set when the request could not be read at all.
	Err error
}

// String is the event as one log line: "request 0: POST /v1/messages:
// served interaction 0 (200)", or "... MISS, nearest interaction 1 differs
// in metadata.tag".
func (e Event) String() string {
	head := fmt.Sprintf("request %d: %s %s: ", e.Request, e.Method, target(e.URL))
	switch {
	case e.Err != nil:
		return head + "unreadable: " + e.Err.Error()
	case e.Miss != nil && e.Fallback:
		return head + "not in the cassette (" + e.Miss.reason() + "): sent live"
	case e.Miss != nil:
		return head + "MISS, " + e.Miss.reason()
	case e.Status == 0:
		return head + fmt.Sprintf("served interaction %d (no response: a recorded transport failure)", e.Interaction)
	}
	return head + fmt.Sprintf("served interaction %d (%d)", e.Interaction, e.Status)
}

// reason is why the request missed, short: for log lines.
func (e *MissError) reason() string {
	switch {
	case e.Nearest < 0:
		return "the cassette has no interactions"
	case e.Served:
		return fmt.Sprintf("identical to interaction %d, which was already served", e.Nearest)
	case len(e.Fields) == 0:
		return fmt.Sprintf("nearest interaction %d", e.Nearest)
	}
	return fmt.Sprintf("nearest interaction %d differs in %s", e.Nearest, strings.Join(e.Fields, ", "))
}

// target is a URL without its scheme and host: the host is the replay's
// own, so it says nothing.
func target(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return raw
	}
	return u.RequestURI()
}

// Miss is a request no recorded interaction answered: its number (from 0,
// in arrival order) and the *MissError explaining it.
type Miss struct {
	Request int
	*MissError
}

// summary is a one-line account of a replay so far: how many requests
// came, how many were served and missed, and which interactions were never
// requested ("3 request(s): 2 served, 1 missed; 1 of 3 interaction(s)
// never requested: 2").
func summary(requests, served, misses, live int, unused []int, total int) string {
	s := fmt.Sprintf("%d request(s): %d served, %d missed", requests, served, misses)
	if live > 0 {
		s += fmt.Sprintf(", %d sent live", live)
	}
	if other := requests - served - misses - live; other > 0 {
		s += fmt.Sprintf(", %d unreadable", other)
	}
	if len(unused) == 0 {
		return s + fmt.Sprintf("; all %d interaction(s) served", total)
	}
	ids := make([]string, len(unused))
	for i, u := range unused {
		ids[i] = fmt.Sprint(u)
	}
	return s + fmt.Sprintf("; %d of %d interaction(s) never requested: %s", len(unused), total, strings.Join(ids, ", "))
}
