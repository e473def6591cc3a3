package sweep

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/openmax/openmax/core/wire"
	"github.com/openmax/openmax/recorder/cassette"
)

// maxListed bounds how many violations of one invariant a row lists.
const maxListed = 3

// observed is what the sweep reads from one transcript.
type observed struct {
	stops    []string     // stop_reason of every done, refused ones included
	lastStop string       // stop_reason of the last turn (refused excluded)
	turns    int          // admitted turns (budget lines)
	retries  int          // retry lines
	refused  map[int]bool // user stdin lines answered by a protocol_error
	refusal  map[int]string
	// afterText lists retries sent after the reply had shown text.
	afterText []int
	// dispatched are the tool calls started, each with whether its turn
	// ended truncated or error.
	dispatched []dispatch
	errors     []string // error line messages
}

type dispatch struct {
	line   int
	callID string
	cut    bool // the turn ended truncated or error
}

// line is the part of a protocol line the sweep reads.
type line struct {
	Type       string `json:"type"`
	StopReason string `json:"stop_reason"`
	Message    string `json:"message"`
	CallID     string `json:"call_id"`
}

// observe reads a transcript. stdin tells which stdin lines were user
// commands.
func observe(stdout, stdin []byte) *observed {
	users := userLines(stdin)
	ob := &observed{refused: map[int]bool{}, refusal: map[int]string{}}
	shown := false // the current reply has shown text
	var turn []int // indexes into ob.dispatched of this turn's tool calls
	for i, raw := range bytes.Split(stdout, []byte("\n")) {
		n := i + 1
		var l line
		if len(bytes.TrimSpace(raw)) == 0 || json.Unmarshal(raw, &l) != nil {
			continue // the checker reports it
		}
		switch l.Type {
		case "budget":
			ob.turns++
			shown, turn = false, turn[:0]
		case "token":
			shown = true
		case "tool_start":
			shown = false // the next reply starts after the tools
			turn = append(turn, len(ob.dispatched))
			ob.dispatched = append(ob.dispatched, dispatch{line: n, callID: l.CallID})
		case "turn_refused":
			shown = false
		case "retry":
			ob.retries++
			if shown {
				ob.afterText = append(ob.afterText, n)
			}
		case "error":
			ob.errors = append(ob.errors, l.Message)
		case "protocol_error":
			if k, ok := wire.AnsweredLine(l.Message); ok {
				if users[k] {
					ob.refused[k] = true
					ob.refusal[k] = l.Message
				}
			}
		case "done":
			ob.stops = append(ob.stops, l.StopReason)
			if l.StopReason != wire.StopRefused {
				ob.lastStop = l.StopReason
			}
			if l.StopReason == wire.StopTruncated || l.StopReason == wire.StopError {
				for _, d := range turn {
					ob.dispatched[d].cut = true
				}
			}
			turn = turn[:0]
		}
	}
	return ob
}

// userLines are the 1-based stdin lines that are user commands.
func userLines(stdin []byte) map[int]bool {
	users := map[int]bool{}
	ls := bytes.Split(stdin, []byte("\n"))
	for i, l := range ls {
		cmd, err := wire.DecodeCommand(bytes.TrimSuffix(l, []byte("\r")))
		if err == nil && cmd.CommandName() == "user" {
			users[i+1] = true
		} else if ce, ok := err.(*wire.CommandError); ok && ce.Name == "user" {
			users[i+1] = true
		}
	}
	return users
}

// invariants lists what one replay broke. base is the unmodified replay of
// the same cassette (nil when judging that one); orig the unmodified
// cassette.
func invariants(ob, base *observed, res Result, stdin []byte, orig *cassette.File, v Variant) []string {
	var fails []string
	add := func(format string, args ...any) { fails = append(fails, fmt.Sprintf(format, args...)) }

	for _, p := range res.Panics {
		add("panic: %s", firstLine(p))
	}
	for _, m := range ob.errors {
		if strings.HasPrefix(m, "internal error: ") {
			add("panic: the turn ended with %q", short(m))
		}
	}

	// The stdio checker, given the client's stdin: shape, sequencing and
	// exactly one done per admitted user command.
	c := wire.NewChecker(wire.Strict())
	c.SetInput(stdin)
	var bad []string
	_, err := c.Stream(bytes.NewReader(res.Stdout), func(v wire.Verdict) {
		if v.Line == 0 {
			bad = append(bad, fmt.Sprintf("check: end: %v", v.Err))
		} else if v.Err != nil {
			bad = append(bad, fmt.Sprintf("check: line %d: %v", v.Line, v.Err))
		}
	})
	if err != nil {
		bad = append(bad, fmt.Sprintf("check: %v", err))
	}
	fails = append(fails, capList(bad)...)

	if len(ob.afterText) > 0 {
		var l []string
		for _, n := range ob.afterText {
			l = append(l, fmt.Sprintf("retry-after-text: line %d retries a reply that had shown text", n))
		}
		fails = append(fails, capList(l)...)
	}

	if v.Cuts && v.Op != nil {
		var l []string
		for _, d := range ob.dispatched {
			if d.cut && onlyIn(orig, v.Op.Interaction, d.callID) {
				l = append(l, fmt.Sprintf("cut-tool: line %d runs tool call %s of the cut reply (interaction %d) in a turn that ended truncated or error", d.line, d.callID, v.Op.Interaction))
			}
		}
		fails = append(fails, capList(l)...)
	}

	want := 0
	if ob.lastStop == wire.StopError {
		want = 1
	}
	if res.Exit != want {
		add("exit: code %d, but the last turn ended %s (want %d)", res.Exit, orNone(ob.lastStop), want)
	}

	if base != nil {
		// Every recorded turn runs: a fault changes how a turn ends, never
		// whether a recorded command gets its turn.
		var l []string
		for _, k := range sortedKeys(ob.refused) {
			if !base.refused[k] {
				l = append(l, fmt.Sprintf("turns: the user command on stdin line %d got no turn (%s)", k, short(ob.refusal[k])))
			}
		}
		fails = append(fails, capList(l)...)
		if ob.turns != base.turns {
			add("turns: %d turn(s) ran, the unmodified replay ran %d", ob.turns, base.turns)
		}
	}
	return fails
}

// onlyIn reports whether call id id appears, quoted, in the response body
// of interaction n of f and of no other interaction: then a tool call with
// that id can only have come from that reply.
func onlyIn(f *cassette.File, n int, id string) bool {
	if id == "" || f == nil || n < 0 || n >= len(f.Interactions) {
		return false
	}
	q := strconv.Quote(id)
	for i, it := range f.Interactions {
		if it == nil {
			continue
		}
		has := strings.Contains(it.Response.Body, q)
		if i == n && !has || i != n && has {
			return false
		}
	}
	return true
}

func capList(l []string) []string {
	if len(l) <= maxListed {
		return l
	}
	return append(l[:maxListed:maxListed], fmt.Sprintf("(%d more)", len(l)-maxListed))
}

func sortedKeys(m map[int]bool) []int { return slices.Sorted(maps.Keys(m)) }

// short cuts a message to one readable line.
func short(s string) string {
	s = firstLine(s)
	if r := []rune(s); len(r) > 100 {
		return string(r[:100]) + "..."
	}
	return s
}

func orNone(s string) string {
	if s == "" {
		return "(no turn)"
	}
	return s
}
