package tape

import (
	"encoding/json"
	"fmt"
	"slices"
	"sync"

	"github.com/openmax/openmax/core"
	"github.com/openmax/openmax/core/harness"
	"github.com/openmax/openmax/core/tool"
	"github.com/openmax/openmax/core/wire"
	"github.com/openmax/openmax/recorder/cassette"
)

// reload answers a reload while recording: the harness reads the
// project's files again (tools too), and the cassette keeps what that
// froze, the receipt and the note the client and the model saw and the
// system prompt and tools the next requests carry, staged before the
// receipt goes out. The tools read again are wrapped like the session's
// first ones, so their results and source checks are recorded.
func (c *capture) reload(live func() harness.Reload) harness.Reload {
	r := live()
	kept := cassette.Reload{
		Tools:   slices.Clone(r.Receipt.Tools),
		Skills:  slices.Clone(r.Receipt.Skills),
		Changes: slices.Clone(r.Receipt.Changes),
		Note:    r.Note,
	}
	if r.Engine != nil {
		wrapped, tools, err := c.wrapTools(r.Engine.Tools)
		if err != nil {
			// The registry it came from held these names once each, so
			// wrapping cannot fail; should it, the session keeps its
			// tools and says so.
			r.Engine = nil
			r.Receipt.Changes = append(r.Receipt.Changes, fmt.Sprintf("not loaded: recording the new tools: %v (the previous tools stay)", err))
			kept.Changes = slices.Clone(r.Receipt.Changes)
		} else {
			e := *r.Engine
			e.Tools = wrapped
			e.Deny = c.denying(e.Deny) // the rules read again, recorded the same way
			r.Engine = &e
			kept.System, kept.Offered = e.System, tools
		}
	}
	c.mu.Lock()
	c.sess.Reloads = append(c.sess.Reloads, kept)
	c.stageLocked()
	c.mu.Unlock()
	return r
}

// replayedReloads answer a replay's reloads with the recorded ones, in
// order: the recorded receipt and note, and an engine offering the
// recorded tools (answered from the recording, as the session's first
// ones are) under the recorded system prompt. A reload the recording does
// not hold is a problem of the replay, answered with the current tools
// and no change.
type replayedReloads struct {
	mu      sync.Mutex
	reloads []cassette.Reload
	next    int
	miss    []string
	base    *core.Engine // the replay's engine, which each answer copies
	cur     *core.Engine // the engine in use
	results *toolResults
}

// answer is the replay's harness.Reloader; live is nil (a replay reads
// nothing from the project).
func (r *replayedReloads) answer(func() harness.Reload) harness.Reload {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := r.next + 1
	if r.next >= len(r.reloads) {
		r.miss = append(r.miss, fmt.Sprintf("reload %d is not in the recording", n))
		return harness.Reload{Receipt: wire.Refrozen{Tools: nonNil(r.cur.Tools.Names()), Skills: []string{}, Changes: []string{}}}
	}
	rec := r.reloads[r.next]
	r.next++
	reg, err := tool.NewRegistry(r.results.tools(rec.Offered)...)
	if err != nil {
		r.miss = append(r.miss, fmt.Sprintf("reload %d: the recorded tools: %v", n, err))
		return harness.Reload{Receipt: wire.Refrozen{Tools: nonNil(r.cur.Tools.Names()), Skills: []string{}, Changes: []string{}}}
	}
	e := *r.base
	e.Tools, e.System = reg, rec.System
	r.cur = &e
	return harness.Reload{
		Engine:  &e,
		Receipt: wire.Refrozen{Tools: nonNil(slices.Clone(rec.Tools)), Skills: nonNil(slices.Clone(rec.Skills)), Changes: nonNil(slices.Clone(rec.Changes))},
		Note:    rec.Note,
	}
}

// problems lists the reloads the recording did not hold and the recorded
// reloads the replay never made.
func (r *replayedReloads) problems() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := slices.Clone(r.miss)
	if left := len(r.reloads) - r.next; left > 0 {
		out = append(out, fmt.Sprintf("%d recorded reload(s) never made, from reload %d on", left, r.next+1))
	}
	return out
}

// legacyReloads says whether s was recorded before reloads were kept: it
// has a reload the harness acted on and no recorded reloads. Its reloads
// replay as they always did, with the session's tools and no change.
func legacyReloads(s *cassette.Session) bool {
	if len(s.Reloads) > 0 {
		return false
	}
	for _, c := range s.Commands {
		var cmd struct {
			Cmd string `json:"cmd"`
		}
		if !c.Refused && json.Unmarshal([]byte(c.Line), &cmd) == nil && cmd.Cmd == "reload" {
			return true
		}
	}
	return false
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
