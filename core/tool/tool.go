// Package tool is the registry the turn engine dispatches tool calls through:
// a tool describes itself to the model and runs one call at a time.
package tool

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/openmax/openmax/provider"
	"github.com/openmax/openmax/provider/redact"
)

// Tool is something the model can call.
//
// Run is called with the call's arguments, already checked to be a JSON
// object, and must return promptly once ctx is cancelled: the engine stops
// waiting for a cancelled call after a grace period (core.Engine.ToolGrace)
// and abandons it, and does not run the tool again in that session until the
// abandoned call has returned. A Tool may be run again for a later call but
// never concurrently with itself by one session.
type Tool interface {
	Spec() provider.ToolSpec
	Run(ctx context.Context, args json.RawMessage) Result
}

// Result is what a tool call returns to the model.
type Result struct {
	Output string
	OK     bool
	// Diffs are the file changes the call made, reported to the client as
	// diff events.
	Diffs []FileDiff
}

// Redacted is r with every secret (redact.Secrets: openmax's own
// credential values) in its output and diffs replaced by redact.Marker: a
// tool that prints a key it was granted, or reads one from a file, must not
// put it on the wire, into the session file, a cassette, a hook's payload
// or the model's next request.
func (r Result) Redacted(secrets []string) Result {
	if len(secrets) == 0 {
		return r
	}
	r.Output = redact.String(r.Output, secrets)
	if len(r.Diffs) > 0 {
		diffs := make([]FileDiff, len(r.Diffs))
		for i, d := range r.Diffs {
			d.Path, d.Unified = redact.String(d.Path, secrets), redact.String(d.Unified, secrets)
			diffs[i] = d
		}
		r.Diffs = diffs
	}
	return r
}

// FileDiff is one file changed by a tool call.
type FileDiff struct {
	Path    string // relative to the project where possible
	Unified string // a unified diff of the change
	Added   int
	Removed int
}

// Mutator is implemented by tools that change files or run commands; the
// approval policy gates them.
type Mutator interface {
	Mutating() bool
}

// Failed is a convenience for an unsuccessful Result.
func Failed(format string, a ...any) Result {
	return Result{Output: fmt.Sprintf(format, a...)}
}

// Registry holds the tools of a session in registration order. It is not
// safe for concurrent mutation; lookups may run concurrently.
//
// A tool's spec is read once, when it is registered: that is the schema
// frozen for the session, re-sent with every request and counted by the
// budget. Its schema is kept compact (the layout of the JSON removed, as
// every wire sends it), so what the budget counts is what the model is
// sent.
type Registry struct {
	byName map[string]Tool
	specs  map[string]provider.ToolSpec
	order  []string
}

// NewRegistry returns a registry holding tools.
func NewRegistry(tools ...Tool) (*Registry, error) {
	r := &Registry{byName: map[string]Tool{}, specs: map[string]provider.ToolSpec{}}
	for _, t := range tools {
		if err := r.Register(t); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// Register adds t. Names must be unique and non-empty.
func (r *Registry) Register(t Tool) error {
	spec := t.Spec()
	name := spec.Name
	if name == "" {
		return fmt.Errorf("tool: empty name")
	}
	if _, dup := r.byName[name]; dup {
		return fmt.Errorf("tool: %q registered twice", name)
	}
	var compact bytes.Buffer
	if len(spec.Schema) > 0 && json.Compact(&compact, spec.Schema) == nil {
		// Invalid JSON stays as it is, for the provider to refuse.
		spec.Schema = json.RawMessage(compact.Bytes())
	}
	r.byName[name] = t
	r.specs[name] = spec
	r.order = append(r.order, name)
	return nil
}

// Lookup finds a tool by name.
func (r *Registry) Lookup(name string) (Tool, bool) {
	if r == nil {
		return nil, false
	}
	t, ok := r.byName[name]
	return t, ok
}

// Specs returns the tool descriptions in registration order, as they were
// when registered, each schema compact.
func (r *Registry) Specs() []provider.ToolSpec {
	if r == nil {
		return nil
	}
	out := make([]provider.ToolSpec, 0, len(r.order))
	for _, name := range r.order {
		out = append(out, r.specs[name])
	}
	return out
}

// Names returns the tool names in registration order.
func (r *Registry) Names() []string {
	if r == nil {
		return nil
	}
	return append([]string(nil), r.order...)
}

// Func is a Tool made of a spec and a function.
type Func struct {
	ToolSpec provider.ToolSpec
	Fn       func(ctx context.Context, args json.RawMessage) Result
}

// Spec returns f.ToolSpec.
func (f Func) Spec() provider.ToolSpec { return f.ToolSpec }

// Run calls f.Fn.
func (f Func) Run(ctx context.Context, args json.RawMessage) Result { return f.Fn(ctx, args) }
