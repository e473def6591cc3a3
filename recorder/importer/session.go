package importer

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"

	"github.com/openmax/openmax/core/runconfig"
	"github.com/openmax/openmax/provider/anthropic"
	"github.com/openmax/openmax/provider/openai"
	"github.com/openmax/openmax/provider/openai/responses"
	"github.com/openmax/openmax/recorder/cassette"
)

// Session makes up the harness session an imported recording stands for,
// so `openmax replay` can run it through the engine: one user command with
// the first request's last user text, the provider and model the request
// names, the tools it offered, and as tool results the tool outputs the
// following requests sent back. It fails when the first request is not a
// Chat Completions, Messages or Responses call with a user message, unless
// the vendor rejected it (HTTP 400 and up): a rejected request needs no
// text the model would read, so one without any gets a stand-in prompt
// naming what it held, and the replay shows the rejection.
//
// A recording of the OpenAI Responses API is replayed with the harness's
// Responses client (provider openai, api responses): its user text is
// read from the request's input (a string, or the role messages among its
// items), its tools are the flat function tools, and its tool results the
// function_call_output items at the end of each later request's input,
// named after the function_call items they answer.
//
// The harness builds its own request bodies, so such a session is replayed
// with the interactions served in order (replay.Options.InOrder). Nothing
// in it says where the recording ends: a replay that has served every
// interaction knows (see `openmax replay`).
func Session(f *cassette.File) (*cassette.Session, error) {
	if len(f.Interactions) == 0 {
		return nil, fmt.Errorf("no interactions")
	}
	first := f.Interactions[0].Request
	wire := "openai"
	isResponses := false
	switch p := requestPath(first.URL); {
	case anthropic.IsPath(p):
		wire = "anthropic"
	case openai.IsPath(p):
	case responses.IsPath(p):
		isResponses = true
	default:
		return nil, fmt.Errorf("the first request (%s) is neither Chat Completions, Messages nor Responses", first.URL)
	}
	var body reqBody
	if err := json.Unmarshal([]byte(first.Body), &body); err != nil {
		return nil, fmt.Errorf("the first request body: %w", err)
	}
	if isResponses {
		msgs, err := responsesInput(body.Input)
		if err != nil && f.Interactions[0].Response.Code < 400 {
			return nil, fmt.Errorf("the first request body: %w", err)
		}
		body.Messages = msgs
	}
	text := ""
	for _, m := range body.Messages {
		if m.Role == "user" {
			if t := contentText(m.Content); t != "" {
				text = t
			}
		}
	}
	if text == "" && f.Interactions[0].Response.Code >= 400 {
		// The vendor rejected the request: no model read it, so the
		// session needs only a prompt that makes the engine send its
		// request and show the recorded rejection.
		text = rejectedPrompt(body.Messages)
	}
	if text == "" {
		return nil, fmt.Errorf("the first request has no user text")
	}
	line, _ := json.Marshal(map[string]string{"cmd": "user", "text": text})
	cfg := runconfig.Defaults()
	cfg.Provider, cfg.Model, cfg.Project = wire, body.Model, "/imported"
	if isResponses {
		cfg.API = runconfig.APIResponses
	}
	// The turn may make as many requests as were recorded, no more.
	cfg.MaxIterations = len(f.Interactions)
	s := &cassette.Session{
		SessionID: "imported",
		Imported:  true,
		Config:    &cfg,
		Commands:  []cassette.Command{{Anchor: cassette.Anchor{After: "hello", Nth: 1}, Line: string(line)}},
	}
	for _, t := range body.Tools {
		tl := cassette.Tool{Name: t.Name, Description: t.Description, Schema: string(t.InputSchema)}
		if t.Function != nil {
			tl = cassette.Tool{Name: t.Function.Name, Description: t.Function.Description, Schema: string(t.Function.Parameters)}
		} else if len(t.Parameters) > 0 { // Responses: a flat function tool
			tl.Schema = string(t.Parameters)
		}
		s.Tools = append(s.Tools, tl)
	}
	// Each later request carries the results of the calls before it.
	for _, it := range f.Interactions[1:] {
		var b reqBody
		if json.Unmarshal([]byte(it.Request.Body), &b) != nil {
			continue
		}
		if isResponses {
			s.ToolResults = append(s.ToolResults, trailingOutputs(b.Input)...)
			continue
		}
		s.ToolResults = append(s.ToolResults, trailingResults(b.Messages)...)
	}
	return s, nil
}

// rejectedPrompt stands in for the user text of a rejected first request
// that has none: it names what the request's last user message held
// instead (its content block types), or that it had no user message.
func rejectedPrompt(msgs []reqMessage) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role != "user" {
			continue
		}
		var blocks []block
		var types []string
		if json.Unmarshal(msgs[i].Content, &blocks) == nil {
			for _, b := range blocks {
				if b.Type != "" {
					types = append(types, b.Type)
				}
			}
		}
		if len(types) == 0 {
			return "(the rejected request's user message holds no text)"
		}
		return "(the rejected request's user message holds no text: " + strings.Join(types, ", ") + ")"
	}
	return "(the rejected request has no user message)"
}

// requestPath is the path of a recorded request URL as it was sent,
// without its query; the URL as it is when it does not parse.
func requestPath(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	return u.EscapedPath()
}

type reqMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCallID string          `json:"tool_call_id"`
	ToolCalls  []struct {
		ID       string `json:"id"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	} `json:"tool_calls"`
}

type reqBody struct {
	Model    string          `json:"model"`
	Messages []reqMessage    `json:"messages"`
	Input    json.RawMessage `json:"input"` // Responses
	Tools    []struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		InputSchema json.RawMessage `json:"input_schema"`
		Parameters  json.RawMessage `json:"parameters"` // Responses
		Function    *struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Parameters  json.RawMessage `json:"parameters"`
		} `json:"function"`
	} `json:"tools"`
}

type block struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
}

// contentText is a message content's text: a string, or its text blocks.
func contentText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var blocks []block
	if json.Unmarshal(raw, &blocks) != nil {
		return ""
	}
	var parts []string
	for _, b := range blocks {
		if b.Type == "text" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// trailingResults returns the tool results at the end of a conversation:
// OpenAI tool messages, or the tool_result blocks of Anthropic's last user
// message, each named after the call it answers.
func trailingResults(msgs []reqMessage) []cassette.ToolResult {
	names := map[string]string{}
	for _, m := range msgs {
		for _, c := range m.ToolCalls {
			names[c.ID] = c.Function.Name
		}
		var blocks []block
		if m.Role == "assistant" && json.Unmarshal(m.Content, &blocks) == nil {
			for _, b := range blocks {
				if b.Type == "tool_use" {
					names[b.ID] = b.Name
				}
			}
		}
	}
	var out []cassette.ToolResult
	i := len(msgs)
	for i > 0 && msgs[i-1].Role == "tool" {
		i--
	}
	for _, m := range msgs[i:] {
		out = append(out, cassette.ToolResult{Name: names[m.ToolCallID], OK: true, Output: contentText(m.Content)})
	}
	if len(out) > 0 || len(msgs) == 0 {
		return out
	}
	last := msgs[len(msgs)-1]
	var blocks []block
	if last.Role != "user" || json.Unmarshal(last.Content, &blocks) != nil {
		return nil
	}
	for _, b := range blocks {
		if b.Type == "tool_result" {
			out = append(out, cassette.ToolResult{Name: names[b.ToolUseID], OK: !b.IsError, Output: contentText(b.Content)})
		}
	}
	return out
}

// trailingOutputs returns the function call outputs at the end of a
// Responses request's input, each named after the function_call item with
// its call_id. An output that is a list of content parts is their text.
func trailingOutputs(raw json.RawMessage) []cassette.ToolResult {
	var items []struct {
		Type   string          `json:"type"`
		CallID string          `json:"call_id"`
		Name   string          `json:"name"`
		Output json.RawMessage `json:"output"`
	}
	if json.Unmarshal(raw, &items) != nil {
		return nil
	}
	names := map[string]string{}
	for _, it := range items {
		if it.Type == "function_call" {
			names[it.CallID] = it.Name
		}
	}
	i := len(items)
	for i > 0 && items[i-1].Type == "function_call_output" {
		i--
	}
	var out []cassette.ToolResult
	for _, it := range items[i:] {
		out = append(out, cassette.ToolResult{Name: names[it.CallID], OK: true, Output: outputText(it.Output)})
	}
	return out
}

// outputText is a function_call_output's output: a string, or the text of
// its input_text parts.
func outputText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []block
	if json.Unmarshal(raw, &parts) != nil {
		return ""
	}
	var texts []string
	for _, p := range parts {
		if p.Type == "input_text" || p.Type == "output_text" || p.Type == "text" {
			texts = append(texts, p.Text)
		}
	}
	return strings.Join(texts, "\n")
}

// responsesInput reads a Responses request's input as messages: a string
// is one user message; a list holds messages ({role, content}, content a
// string or input_text parts) among other items, which are skipped.
func responsesInput(raw json.RawMessage) ([]reqMessage, error) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		text, _ := json.Marshal(s)
		return []reqMessage{{Role: "user", Content: text}}, nil
	}
	var items []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, fmt.Errorf("input: %w", err)
	}
	var out []reqMessage
	for _, it := range items {
		if it.Role == "" {
			continue
		}
		var parts []block
		if json.Unmarshal(it.Content, &parts) == nil {
			for i := range parts {
				if parts[i].Type == "input_text" || parts[i].Type == "output_text" {
					parts[i].Type = "text"
				}
			}
			it.Content, _ = json.Marshal(parts)
		}
		out = append(out, reqMessage{Role: it.Role, Content: it.Content})
	}
	return out, nil
}
