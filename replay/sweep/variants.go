package sweep

import (
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/openmax/openmax/recorder/cassette"
	"github.com/openmax/openmax/recorder/edit"
)

// Kind is one row of the fault table: a name and the ops of that kind that
// can be placed on one interaction of a cassette.
type Kind struct {
	// Name labels the kind in summaries ("429", "truncate", ...).
	Name string
	// At returns the ops of this kind on interaction n of f, one per place
	// (every chunk boundary of its body, for the kinds that cut a body).
	// Ops that Inject refuses on f (a stream error on a body that is not
	// an event stream, a cut of an interaction that got no response) are
	// dropped by Enumerate, so At need not know every rule of Inject.
	At func(f *cassette.File, n int) []edit.Op
	// Cuts reports that the ops cut interaction Op.Interaction's body, so
	// none of the tool calls of that reply may be dispatched unless the
	// engine saw it complete.
	Cuts bool
}

// Kinds is the fault table the sweep uses by default: every op kind of
// recorder/edit, the statuses one row each. Adding a kind is one row here.
var Kinds = []Kind{
	{Name: "429", At: before(http.StatusTooManyRequests, "")},
	{Name: "429 retry-after=2", At: before(http.StatusTooManyRequests, "2")},
	{Name: "429 retry-after=120", At: before(http.StatusTooManyRequests, "120")},
	{Name: "500", At: before(500, "")},
	{Name: "502", At: before(502, "")},
	{Name: "503", At: before(503, "")},
	{Name: "504", At: before(504, "")},
	{Name: "529", At: before(529, "")},
	{Name: "truncate", Cuts: true, At: chunkOps(edit.KindTruncate, false)},
	{Name: "reset", Cuts: true, At: byteOps(false)},
	{Name: "stream-error", Cuts: true, At: chunkOps(edit.KindStreamError, false)},
	// The same cuts served once: the engine's retry gets the recorded reply.
	{Name: "truncate recover", Cuts: true, At: chunkOps(edit.KindTruncate, true)},
	{Name: "reset recover", Cuts: true, At: byteOps(true)},
	{Name: "stream-error recover", Cuts: true, At: chunkOps(edit.KindStreamError, true)},
}

// before places an error response with status (and a Retry-After when
// retryAfter is set) before interaction n: one op per interaction.
func before(status int, retryAfter string) func(*cassette.File, int) []edit.Op {
	kind := edit.KindServerError
	if status == http.StatusTooManyRequests {
		kind = edit.KindRateLimit
	}
	return func(_ *cassette.File, n int) []edit.Op {
		return []edit.Op{{Kind: kind, Status: status, Before: n, RetryAfter: retryAfter}}
	}
}

// chunkOps places an op of kind (truncate or stream_error) at every chunk
// K of interaction n's body, K from 0 (nothing of the body kept) to the
// last chunk.
func chunkOps(kind string, recover bool) func(*cassette.File, int) []edit.Op {
	return func(f *cassette.File, n int) []edit.Op {
		var ops []edit.Op
		for k := range chunks(f.Interactions[n]) {
			ops = append(ops, edit.Op{Kind: kind, Interaction: n, Chunk: k, Recover: recover})
		}
		return ops
	}
}

// byteOps places a reset at every chunk boundary of interaction n's body
// (before its first byte, between every two chunks, after its last byte)
// and at every event boundary of an event stream (after each blank line),
// so a connection also dies between the events a single recorded chunk
// carries: before any text, after some, after the finish.
func byteOps(recover bool) func(*cassette.File, int) []edit.Op {
	return func(f *cassette.File, n int) []edit.Op {
		cs := chunks(f.Interactions[n])
		if len(cs) == 0 {
			return nil
		}
		at := map[int]bool{0: true}
		var body strings.Builder
		for _, c := range cs {
			body.WriteString(c.Data)
			at[body.Len()] = true
		}
		b := body.String()
		for i := 0; i < len(b); {
			j := strings.Index(b[i:], "\n\n")
			if j < 0 {
				break
			}
			i += j + 2
			at[i] = true
		}
		var ops []edit.Op
		for _, k := range slices.Sorted(maps.Keys(at)) {
			ops = append(ops, edit.Op{Kind: edit.KindReset, Interaction: n, Byte: k, Recover: recover})
		}
		return ops
	}
}

// chunks is an interaction's body as it arrived (see
// cassette.Interaction.Chunks); none for an empty slot.
func chunks(it *cassette.Interaction) []cassette.Chunk {
	if it == nil {
		return nil
	}
	return it.Chunks()
}

// Variant is one replay of a sweep: a cassette with at most one fault.
type Variant struct {
	// Kind is the Kind.Name of the fault, or None for the unmodified
	// cassette.
	Kind string
	// Op is the fault; nil for None.
	Op *edit.Op
	// Cuts copies Kind.Cuts.
	Cuts bool
}

// None names the variant that replays the cassette unmodified.
const None = "none"

// Name is the op in `openmax cassette inject --op` syntax, or "none".
func (v Variant) Name() string {
	if v.Op == nil {
		return None
	}
	return v.Op.String()
}

// Enumerate lists every variant of f: every kind of kinds × every
// interaction × every place, in that order, keeping only the ops Inject
// accepts. The unmodified cassette is not among them.
func Enumerate(f *cassette.File, kinds []Kind) []Variant {
	var out []Variant
	for _, k := range kinds {
		for n := range f.Interactions {
			for _, op := range k.At(f, n) {
				if _, err := edit.Inject(f, op); err != nil {
					continue // not applicable here
				}
				op := op
				out = append(out, Variant{Kind: k.Name, Op: &op, Cuts: k.Cuts})
			}
		}
	}
	return out
}

// Select bounds vs to at most max variants (all of them when max <= 0 or
// there are no more than max). The choice is deterministic and fair: the
// budget is shared evenly among the kinds (a kind with fewer variants than
// its share passes the rest on), and within a kind the chosen variants are
// spread evenly from its first to its last, so the first and last
// interaction and chunk boundary are always among them. Order is kept.
func Select(vs []Variant, max int) []Variant {
	if max <= 0 || len(vs) <= max {
		return vs
	}
	// Group by kind, in order of first appearance.
	var order []string
	groups := map[string][]int{}
	for i, v := range vs {
		if _, ok := groups[v.Kind]; !ok {
			order = append(order, v.Kind)
		}
		groups[v.Kind] = append(groups[v.Kind], i)
	}
	// Water-fill the budget over the kinds.
	share := map[string]int{}
	left := max
	for left > 0 {
		open := 0
		for _, k := range order {
			if share[k] < len(groups[k]) {
				open++
			}
		}
		if open == 0 {
			break
		}
		each := left / open
		if each == 0 {
			each = 1
		}
		for _, k := range order {
			if left == 0 {
				break
			}
			if room := len(groups[k]) - share[k]; room > 0 {
				give := min(each, room, left)
				share[k] += give
				left -= give
			}
		}
	}
	keep := make([]bool, len(vs))
	for _, k := range order {
		for _, i := range spread(len(groups[k]), share[k]) {
			keep[groups[k][i]] = true
		}
	}
	out := make([]Variant, 0, max)
	for i, v := range vs {
		if keep[i] {
			out = append(out, v)
		}
	}
	return out
}

// spread picks m of the indices 0..c-1, evenly spread and including both
// ends when m > 1.
func spread(c, m int) []int {
	switch {
	case m <= 0:
		return nil
	case m >= c:
		out := make([]int, c)
		for i := range out {
			out[i] = i
		}
		return out
	case m == 1:
		return []int{c / 2}
	}
	out := make([]int, m)
	for i := range out {
		out[i] = i * (c - 1) / (m - 1)
	}
	return out
}
