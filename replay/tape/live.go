package tape

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"

	"github.com/openmax/openmax/recorder"
	"github.com/openmax/openmax/recorder/cassette"
	"github.com/openmax/openmax/recorder/mode"
	"github.com/openmax/openmax/recorder/replay"
)

// Policy says which requests of a replay go to the network (see Live).
type Policy int

const (
	// Missing sends each request the cassette does not hold live and
	// keeps every recorded interaction, appending the new ones (record
	// mode missing).
	Missing Policy = iota + 1
	// Refresh sends every request live and keeps none (record mode
	// refresh).
	Refresh
	// FromChange replays until the first request the cassette does not
	// hold and sends it and every request after it live; the new cassette
	// keeps the interactions served before it, byte for byte, and the
	// ones recorded after (openmax record --from-change).
	FromChange
)

// PolicyOf is the policy of a record mode that goes to the network
// (missing, refresh), false for the modes that only replay.
func PolicyOf(m mode.Mode) (Policy, bool) {
	switch m {
	case mode.Missing:
		return Missing, true
	case mode.Refresh:
		return Refresh, true
	}
	return 0, false
}

// Live makes a replay record: the recorded client and tools play as in a
// replay, and the requests Policy names go to the network, recorded into
// a new cassette.
type Live struct {
	Policy Policy
	// Items are the cassette's interactions with their text
	// (cassette.Items): what the new cassette keeps is written as it is.
	Items []cassette.Item
	// Cassette is where the new cassette goes (Path, Overwrite, Scrub);
	// Transport is the network (nil: http.DefaultTransport). Its Keep is
	// set by the replay.
	Cassette recorder.Options
	// BaseURL, when set, replaces the recorded base URL (the live
	// endpoint; requests served from the cassette match whatever host).
	BaseURL string
	// Getenv gives the credentials the live requests carry (the replay
	// gives placeholders otherwise).
	Getenv func(string) string
	// Passthrough hosts are sent to Cassette.Transport as they are,
	// neither served nor recorded.
	Passthrough mode.Passthrough
}

// LiveResult is what went live in a replay with Live set.
type LiveResult struct {
	// Changed is the first request the cassette did not hold (nil when
	// every request matched): which recorded interaction it was nearest
	// and how it differs.
	Changed *replay.Miss
	// Sent counts the requests that went live and were recorded.
	Sent int
	// Kept are the indices of the old interactions the new cassette
	// starts with, in order.
	Kept []int
	// Written says a new cassette was written (nothing is, when nothing
	// went live).
	Written bool
}

// liveTransport is a replay's transport under Live: the replayer, with
// what the policy names sent to a recorder made at the first such request.
type liveTransport struct {
	l    Live
	rp   *replay.Replayer
	net  http.RoundTripper
	sess *cassette.Session

	mu       sync.Mutex
	rec      *recorder.Recorder
	recErr   error
	switched bool // FromChange: the change was met, all goes live
	res      LiveResult
	requests int
}

func newLiveTransport(l Live, f *cassette.File, so replay.Options) (*liveTransport, error) {
	if len(l.Items) != len(f.Interactions) {
		return nil, fmt.Errorf("tape: %d item texts for %d interactions", len(l.Items), len(f.Interactions))
	}
	t := &liveTransport{l: l, net: l.Cassette.Transport, sess: f.Session}
	if t.net == nil {
		t.net = http.DefaultTransport
	}
	so.Fallback = t.fallback
	so.Scrub = recorder.ScrubFunc(l.Cassette.Scrub)
	t.rp = replay.New(f, so)
	return t, nil
}

func (t *liveTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL != nil && t.l.Passthrough.Match(req.URL.Host) {
		return t.net.RoundTrip(req)
	}
	t.mu.Lock()
	t.requests++
	direct := t.l.Policy == Refresh || t.switched
	t.mu.Unlock()
	if direct {
		return t.live(req)
	}
	return t.rp.RoundTrip(req)
}

// fallback takes a request the cassette does not hold.
func (t *liveTransport) fallback(req *http.Request, miss *replay.MissError) (*http.Response, error) {
	t.mu.Lock()
	if t.res.Changed == nil {
		t.res.Changed = &replay.Miss{Request: t.requests - 1, MissError: miss}
	}
	if t.l.Policy == FromChange {
		t.switched = true
	}
	t.mu.Unlock()
	return t.live(req)
}

// live sends req to the network through the recorder, made at the first
// live request with what the policy keeps.
func (t *liveTransport) live(req *http.Request) (*http.Response, error) {
	t.mu.Lock()
	if t.rec == nil && t.recErr == nil {
		var keep []int
		switch t.l.Policy {
		case Missing:
			for i := range t.l.Items {
				keep = append(keep, i)
			}
		case FromChange:
			unused := t.rp.Unused()
			for i := range t.l.Items {
				if !slices.Contains(unused, i) {
					keep = append(keep, i)
				}
			}
		}
		o := t.l.Cassette
		o.Keep = nil
		for _, i := range keep {
			o.Keep = append(o.Keep, t.l.Items[i])
		}
		t.rec, t.recErr = recorder.New(o)
		if t.recErr == nil {
			t.res.Kept = keep
			t.rec.StageSession(t.sess)
		}
	}
	rec, err := t.rec, t.recErr
	if err == nil {
		t.res.Sent++
	}
	t.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return rec.RoundTrip(req)
}

// finish writes the new cassette, if anything went live.
func (t *liveTransport) finish() (LiveResult, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.recErr != nil {
		return t.res, t.recErr
	}
	if t.rec == nil {
		return t.res, nil
	}
	t.rec.StageSession(t.sess)
	err := t.rec.Close()
	t.res.Written = err == nil || !errors.Is(err, recorder.ErrIncomplete)
	return t.res, err
}
