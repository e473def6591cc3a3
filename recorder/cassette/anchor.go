package cassette

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Anchor is a point of a session's stdout, in protocol terms: after the
// Nth line of type After since the Turn-th done line. Turn counts every
// done (refused ones included). After is "done" with Nth 0 for the point
// right after that done (the idle harness), and "hello" at the start.
type Anchor struct {
	Turn  int    `yaml:"turn"`
	After string `yaml:"after,omitempty"`
	Nth   int    `yaml:"nth,omitempty"`
}

// String renders the anchor for people: "turn 1, after retry #2".
func (a Anchor) String() string {
	switch {
	case a.After == "":
		return "unanchored"
	case a.After == "done" && a.Nth == 0:
		if a.Turn == 0 {
			return "at the start"
		}
		return fmt.Sprintf("after done #%d", a.Turn)
	}
	return fmt.Sprintf("turn %d, after %s #%d", a.Turn, a.After, a.Nth)
}

// Position follows a session's stdout line by line and tells where it is
// as an Anchor. The recorder asks it where each client command arrived;
// a replay asks it whether a command's anchor has been reached. It is not
// safe for concurrent use.
type Position struct {
	lines int            // every line so far
	turn  int            // done lines so far
	last  string         // type of the last line since the turn began ("" for none)
	seen  map[string]int // lines of each type since the turn began
}

// Observe advances past one stdout line (with or without its newline).
// A line that is not a JSON object with a string "type" counts as a line
// of type "?".
func (p *Position) Observe(line []byte) {
	if p.seen == nil {
		p.seen = map[string]int{}
	}
	p.lines++
	typ := lineType(line)
	if typ == "done" {
		p.turn++
		p.last = ""
		clear(p.seen)
		return
	}
	p.last = typ
	p.seen[typ]++
}

// Lines is how many lines have been observed.
func (p *Position) Lines() int { return p.lines }

// Turn is how many done lines have been observed.
func (p *Position) Turn() int { return p.turn }

// Here is the anchor of the current point.
func (p *Position) Here() Anchor {
	if p.last == "" {
		return Anchor{Turn: p.turn, After: "done"}
	}
	return Anchor{Turn: p.turn, After: p.last, Nth: p.seen[p.last]}
}

// Reached reports whether the session has got to a (or past it). A point
// of a later turn is reached when that turn begins; a point that the
// current turn never produced (a fault cut it short) is passed once the
// turn's done goes out.
func (p *Position) Reached(a Anchor) bool {
	switch {
	case p.turn != a.Turn:
		return p.turn > a.Turn
	case a.After == "done" && a.Nth == 0:
		return true
	}
	return p.seen[a.After] >= a.Nth
}

// Due reports whether c should be delivered now: its anchor is reached or,
// for a cassette from before anchors, its line count is.
func (p *Position) Due(c Command) bool {
	if c.After == "" {
		return p.lines >= c.AfterLines
	}
	return p.Reached(c.Anchor)
}

// lineType is the "type" member of a protocol line.
func lineType(line []byte) string {
	var v struct {
		Type *string `json:"type"`
	}
	if err := json.Unmarshal(bytes.TrimSpace(line), &v); err != nil || v.Type == nil {
		return "?"
	}
	return *v.Type
}
