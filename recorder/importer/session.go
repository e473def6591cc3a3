package importer

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/openmax/openmax/core/runconfig"
	"github.com/openmax/openmax/provider/codec"
	_ "github.com/openmax/openmax/provider/vendors" // every built-in wire
	"github.com/openmax/openmax/recorder/cassette"
)

// Session makes up the harness session an imported recording stands for,
// so `openmax replay` can run it through the engine: one user command with
// the first request's last user text, the provider and model the request
// names, the tools it offered, and as tool results the tool outputs the
// following requests sent back, each read by the request's wire
// (provider/codec: Wire.ReadRequest). It fails when the first request is
// not a model call of a registered wire (a POST to one of its endpoints)
// with a user message, unless the vendor rejected it (HTTP 400 and up): a rejected request needs no
// text the model would read, so one without any gets a stand-in prompt
// naming what it held, and the replay shows the rejection.
//
// The session names the wire's provider, and its --api unless it is the
// provider's default wire: a recording of the OpenAI Responses API is
// replayed with the harness's Responses client (provider openai, api
// responses).
//
// The harness builds its own request bodies, so such a session is replayed
// with the interactions served in order (replay.Options.InOrder). Nothing
// in it says where the recording ends: a replay that has served every
// interaction knows (see `openmax replay`).
func Session(f *cassette.File) (*cassette.Session, error) {
	if len(f.Interactions) == 0 {
		return nil, fmt.Errorf("no interactions")
	}
	first := f.Interactions[0]
	req := codec.RecordedRequest(first.Request.Method, first.Request.URL, first.Request.Headers)
	w, claim, err := codec.ForRequest(req)
	if err == nil && claim != codec.ClaimEndpoint {
		in := w.Info()
		err = fmt.Errorf("%s is no model call of the %s wire (%s)", req, in.Name, strings.Join(in.Endpoints, ", "))
	}
	if err != nil {
		return nil, fmt.Errorf("the first request (%s): %w", first.Request.URL, err)
	}
	rejected := first.Response.Code >= 400
	call, err := w.ReadRequest(req, []byte(first.Request.Body))
	if err == nil && call.Partial != nil && !rejected {
		err = call.Partial
	}
	if err != nil {
		return nil, fmt.Errorf("the first request body: %w", err)
	}
	text := call.UserText
	if text == "" && rejected {
		// The vendor rejected the request: no model read it, so the
		// session needs only a prompt that makes the engine send its
		// request and show the recorded rejection.
		text = rejectedPrompt(call)
	}
	if text == "" {
		return nil, fmt.Errorf("the first request has no user text")
	}
	line, _ := json.Marshal(map[string]string{"cmd": "user", "text": text})
	in := w.Info()
	cfg := runconfig.Defaults()
	cfg.Provider, cfg.Model, cfg.Project = in.Provider, call.Model, "/imported"
	if !in.Default {
		cfg.API = in.API
	}
	// The turn may make as many requests as were recorded, no more.
	cfg.MaxIterations = len(f.Interactions)
	s := &cassette.Session{
		SessionID: "imported",
		Imported:  true,
		Config:    &cfg,
		Commands:  []cassette.Command{{Anchor: cassette.Anchor{After: "hello", Nth: 1}, Line: string(line)}},
	}
	for _, t := range call.Tools {
		s.Tools = append(s.Tools, cassette.Tool{Name: t.Name, Description: t.Description, Schema: string(t.Schema)})
	}
	// Each later request carries the results of the calls before it.
	for _, it := range f.Interactions[1:] {
		c, err := w.ReadRequest(codec.RecordedRequest(it.Request.Method, it.Request.URL, it.Request.Headers), []byte(it.Request.Body))
		if err != nil {
			continue
		}
		for _, r := range c.Results {
			s.ToolResults = append(s.ToolResults, cassette.ToolResult{Name: r.Name, OK: r.OK, Output: r.Output})
		}
	}
	return s, nil
}

// rejectedPrompt stands in for the user text of a rejected first request
// that has none: it names what the request's last user message held
// instead (its content block types), or that it had no user message.
func rejectedPrompt(c *codec.Call) string {
	switch {
	case !c.HasUser:
		return "(the rejected request has no user message)"
	case len(c.UserHolds) == 0:
		return "(the rejected request's user message holds no text)"
	}
	return "(the rejected request's user message holds no text: " + strings.Join(c.UserHolds, ", ") + ")"
}
