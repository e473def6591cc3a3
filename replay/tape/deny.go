package tape

import (
	"encoding/json"
	"sync"

	"github.com/openmax/openmax/core"
	"github.com/openmax/openmax/recorder/cassette"
)

// recordingDenier keeps each decision of the session's deny rules in the
// cassette, so a replay (which reads no policy file) refuses the same
// calls.
type recordingDenier struct {
	next core.Denier
	c    *capture
}

// denying wraps d for the recording; nil stays nil (no rules apply).
func (c *capture) denying(d core.Denier) core.Denier {
	if d == nil {
		return nil
	}
	if r, ok := d.(*recordingDenier); ok {
		return r
	}
	return &recordingDenier{next: d, c: c}
}

func (d *recordingDenier) Deny(name string, args json.RawMessage) string {
	why := d.next.Deny(name, args)
	c := d.c
	c.mu.Lock()
	c.sess.Denials = append(c.sess.Denials, cassette.Denial{Tool: name, Refusal: why})
	c.stageLocked()
	c.mu.Unlock()
	return why
}

// replayedDenier answers the deny check of each call with the recorded
// decision, in order. A call past the recorded ones, or of another tool
// than recorded, is let through (the replay's tool results then tell).
type replayedDenier struct {
	mu        sync.Mutex
	decisions []cassette.Denial
}

func (d *replayedDenier) Deny(name string, _ json.RawMessage) string {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.decisions) == 0 || d.decisions[0].Tool != name {
		return ""
	}
	why := d.decisions[0].Refusal
	d.decisions = d.decisions[1:]
	return why
}
