package wireread

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/openmax/openmax/provider"
	"github.com/openmax/openmax/provider/codec"
)

// Head is the top of any wire's request body that names its model and
// asks for a stream.
type Head struct {
	Model  string `json:"model"`
	Stream bool   `json:"stream"`
}

// Message is a message of a Chat Completions or Messages request.
type Message struct {
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

// Block is a content block of a message (or a content part).
type Block struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
}

// ToolDef is a tool offered in a request: Messages' {name, description,
// input_schema}, Chat Completions' {function: {name, description,
// parameters}}, or the Responses API's flat {name, description,
// parameters}.
type ToolDef struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"`
	Parameters  json.RawMessage `json:"parameters"`
	Function    *struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
	} `json:"function"`
}

// Spec is the tool as the provider describes it.
func (t *ToolDef) Spec() provider.ToolSpec {
	s := provider.ToolSpec{Name: t.Name, Description: t.Description, Schema: t.InputSchema}
	if f := t.Function; f != nil {
		s = provider.ToolSpec{Name: f.Name, Description: f.Description, Schema: f.Parameters}
	} else if len(t.Parameters) > 0 {
		s.Schema = t.Parameters
	}
	return s
}

// ReadMessages reads a Chat Completions or Messages request body into a
// codec.Call (see codec.Wire.ReadRequest): it fails when the body's model
// and stream do not read; messages or tools that do not read leave the
// call Partial.
func ReadMessages(body []byte) (*codec.Call, error) {
	var head Head
	if err := json.Unmarshal(body, &head); err != nil {
		return nil, err
	}
	c := &codec.Call{Model: head.Model, Stream: head.Stream, Summary: MessagesSummary(body)}
	var v struct {
		Messages []Message `json:"messages"`
		Tools    []ToolDef `json:"tools"`
	}
	if err := json.Unmarshal(body, &v); err != nil {
		c.Partial = err
		return c, nil
	}
	Fill(c, v.Messages)
	for i := range v.Tools {
		c.Tools = append(c.Tools, v.Tools[i].Spec())
	}
	c.Results = TrailingResults(v.Messages)
	return c, nil
}

// Fill sets c's user text and what its last user message holds.
func Fill(c *codec.Call, msgs []Message) {
	for _, m := range msgs {
		if m.Role == "user" {
			c.HasUser = true
			if t := ContentText(m.Content); t != "" {
				c.UserText = t
			}
		}
	}
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role != "user" {
			continue
		}
		var blocks []Block
		if json.Unmarshal(msgs[i].Content, &blocks) == nil {
			for _, b := range blocks {
				if b.Type != "" {
					c.UserHolds = append(c.UserHolds, b.Type)
				}
			}
		}
		break
	}
}

// ContentText is a message content's text: a string, or its text blocks
// joined by newlines.
func ContentText(raw json.RawMessage) string { return PartsText(raw, "text") }

// PartsText is a content's text: a string, or the text of its parts of
// the given types joined by newlines.
func PartsText(raw json.RawMessage, types ...string) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var blocks []Block
	if json.Unmarshal(raw, &blocks) != nil {
		return ""
	}
	var parts []string
	for _, b := range blocks {
		if slices.Contains(types, b.Type) {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// TrailingResults returns the tool results at the end of a conversation:
// Chat Completions tool messages, or the tool_result blocks of a Messages
// last user message, each named after the call it answers.
func TrailingResults(msgs []Message) []codec.Result {
	names := map[string]string{}
	for _, m := range msgs {
		for _, c := range m.ToolCalls {
			names[c.ID] = c.Function.Name
		}
		var blocks []Block
		if m.Role == "assistant" && json.Unmarshal(m.Content, &blocks) == nil {
			for _, b := range blocks {
				if b.Type == "tool_use" {
					names[b.ID] = b.Name
				}
			}
		}
	}
	var out []codec.Result
	i := len(msgs)
	for i > 0 && msgs[i-1].Role == "tool" {
		i--
	}
	for _, m := range msgs[i:] {
		out = append(out, codec.Result{Name: names[m.ToolCallID], OK: true, Output: ContentText(m.Content)})
	}
	if len(out) > 0 || len(msgs) == 0 {
		return out
	}
	last := msgs[len(msgs)-1]
	var blocks []Block
	if last.Role != "user" || json.Unmarshal(last.Content, &blocks) != nil {
		return nil
	}
	for _, b := range blocks {
		if b.Type == "tool_result" {
			out = append(out, codec.Result{Name: names[b.ToolUseID], OK: !b.IsError, Output: ContentText(b.Content)})
		}
	}
	return out
}

// MessagesSummary describes a Chat Completions or Messages request body:
// its model, whether it streams, and its last message. nil when the body
// does not read as one.
func MessagesSummary(body []byte) []string {
	var v struct {
		Model    string `json:"model"`
		Stream   bool   `json:"stream"`
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if json.Unmarshal(body, &v) != nil {
		return nil
	}
	parts := HeadSummary(v.Model, v.Stream)
	if n := len(v.Messages); n > 0 {
		parts = append(parts, codec.Plural(n, "message"))
		last := v.Messages[n-1]
		parts = append(parts, fmt.Sprintf("last %s %s", last.Role, codec.Quote(codec.Clip(ShownText(last.Content), codec.PreviewRunes))))
	}
	return parts
}

// HeadSummary is how a summary starts: "model M" and "stream", each when
// the request says so.
func HeadSummary(model string, stream bool) []string {
	parts := []string{}
	if model != "" {
		parts = append(parts, "model "+model)
	}
	if stream {
		parts = append(parts, "stream")
	}
	return parts
}

// ShownText is the text of a message's content as a summary shows it: a
// string, or the text of its blocks (a tool_result by its content, a
// block without text by its type, in brackets).
func ShownText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var blocks []struct {
		Type    string          `json:"type"`
		Text    string          `json:"text"`
		Content json.RawMessage `json:"content"`
	}
	if json.Unmarshal(raw, &blocks) != nil {
		return ""
	}
	var out []string
	for _, b := range blocks {
		switch {
		case b.Text != "":
			out = append(out, b.Text)
		case b.Type == "tool_result" && len(b.Content) > 0:
			out = append(out, "[tool_result] "+ShownText(b.Content))
		default:
			out = append(out, "["+b.Type+"]")
		}
	}
	return strings.Join(out, " ")
}
