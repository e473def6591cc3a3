package replay

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Pace modes.
const (
	// PaceInstant serves everything at once: no waits at all, not even a
	// look at the clock. It is the default (also for an empty Mode).
	PaceInstant = "instant"
	// PaceRecorded waits, before each chunk, until its recorded arrival
	// offset has passed since RoundTrip was called.
	PaceRecorded = "recorded"
	// PaceScaled is PaceRecorded with every offset divided by Factor.
	PaceScaled = "scaled"
)

// Pace is how fast a replay serves what was recorded.
type Pace struct {
	// Mode is PaceInstant (or ""), PaceRecorded or PaceScaled. Any other
	// value is instant.
	Mode string
	// Factor divides the recorded offsets in PaceScaled mode: 2 replays
	// twice as fast. A factor that is not a positive finite number counts
	// as 1.
	Factor float64
}

// ParsePace reads a pace as a flag gives it: "instant" (or ""),
// "recorded", or "xN" for the recorded pace sped up N times (N > 0, not
// necessarily whole: "x2", "x0.5", "x10").
func ParsePace(s string) (Pace, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	switch t {
	case "", PaceInstant:
		return Pace{Mode: PaceInstant}, nil
	case PaceRecorded:
		return Pace{Mode: PaceRecorded, Factor: 1}, nil
	}
	if n, ok := strings.CutPrefix(t, "x"); ok {
		f, err := strconv.ParseFloat(n, 64)
		if err == nil && f > 0 && !math.IsInf(f, 0) && !math.IsNaN(f) {
			return Pace{Mode: PaceScaled, Factor: f}, nil
		}
	}
	return Pace{}, fmt.Errorf("replay: bad pace %q: want instant, recorded, or xN with N > 0 (x2 is twice as fast)", s)
}

// String renders p the way ParsePace reads it.
func (p Pace) String() string {
	switch p.Mode {
	case PaceRecorded:
		return PaceRecorded
	case PaceScaled:
		return "x" + strconv.FormatFloat(p.factor(), 'g', -1, 64)
	}
	return PaceInstant
}

// paced reports whether p waits at all.
func (p Pace) paced() bool { return p.Mode == PaceRecorded || p.Mode == PaceScaled }

func (p Pace) factor() float64 {
	if p.Mode != PaceScaled || !(p.Factor > 0) || math.IsInf(p.Factor, 0) {
		return 1
	}
	return p.Factor
}

// scale is the replayed offset of a recorded one.
func (p Pace) scale(d time.Duration) time.Duration {
	f := p.factor()
	if f == 1 {
		return d
	}
	return time.Duration(float64(d) / f)
}
