package bedrock

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/openmax/openmax/provider"
)

// Reading recorded requests: what a ConverseStream or invoke request asks
// for, for deriving a replayable session from a recording.

// Call is what a request asks for.
type Call struct {
	// Model is the model the path names; API the operation.
	Model string
	API   API
	// Stream reports whether the operation streams (converse-stream,
	// invoke-with-response-stream; not converse, invoke).
	Stream bool
	// UserText is the text of the last user message that has any.
	UserText string
	// HasUser reports whether the request holds a user message at all.
	HasUser bool
	// UserHolds are the kinds of content the last user message holds, as
	// the wire names them (text, toolResult, image; text, tool_result).
	UserHolds []string
	// Tools are the tools offered, in order.
	Tools []provider.ToolSpec
	// Results are the tool results the last user message sends back, in
	// order, each named after the call it answers.
	Results []Result
}

// Result is a tool's result sent back in a request.
type Result struct {
	// Name is the tool of the call the result answers, "" when the
	// request does not show the call.
	Name string
	// OK is false for a result the request marks as an error.
	OK     bool
	Output string
}

// ParseRequestPath reads a runtime request path, the streaming
// operations and the whole ones (converse, invoke): the model, the
// operation and whether it streams.
func ParseRequestPath(p string) (model string, api API, stream, ok bool) {
	if m, a, ok := ParsePath(p); ok {
		return m, a, true, true
	}
	p, _, _ = strings.Cut(p, "?")
	for _, w := range []struct {
		suffix string
		api    API
	}{{"/converse", APIConverse}, {"/invoke", APIInvoke}} {
		if i := strings.LastIndex(p, "/model/"); i >= 0 && strings.HasSuffix(p, w.suffix) {
			if m, _, ok := ParsePath(p[:len(p)-len(w.suffix)] + "/converse-stream"); ok {
				return m, w.api, false, true
			}
		}
	}
	return "", "", false, false
}

// ReadRequest reads a recorded request to path with body. It fails when
// the path is not a Bedrock runtime call or the body is not JSON.
func ReadRequest(path string, body []byte) (*Call, error) {
	model, api, stream, ok := ParseRequestPath(path)
	if !ok {
		return nil, fmt.Errorf("bedrock: %s is not a Bedrock runtime model call", path)
	}
	c := &Call{Model: model, API: api, Stream: stream}
	var err error
	if api == APIInvoke {
		err = c.readMessages(body)
	} else {
		err = c.readConverse(body)
	}
	if err != nil {
		return nil, fmt.Errorf("bedrock: the request body: %w", err)
	}
	return c, nil
}

// readConverse reads a Converse body.
func (c *Call) readConverse(body []byte) error {
	var r struct {
		Messages []struct {
			Role    string                       `json:"role"`
			Content []map[string]json.RawMessage `json:"content"`
		} `json:"messages"`
		ToolConfig *ToolConfig `json:"toolConfig"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return err
	}
	if r.ToolConfig != nil {
		for _, t := range r.ToolConfig.Tools {
			c.Tools = append(c.Tools, provider.ToolSpec{Name: t.ToolSpec.Name, Description: t.ToolSpec.Description, Schema: t.ToolSpec.InputSchema.JSON})
		}
	}
	names := map[string]string{}
	for i, m := range r.Messages {
		last := i == len(r.Messages)-1
		var texts []string
		var holds []string
		for _, b := range m.Content {
			for kind, raw := range b {
				holds = append(holds, kind)
				switch kind {
				case "text":
					var s string
					if json.Unmarshal(raw, &s) == nil && s != "" {
						texts = append(texts, s)
					}
				case "toolUse":
					var tu ToolUse
					if json.Unmarshal(raw, &tu) == nil {
						names[tu.ToolUseID] = tu.Name
					}
				case "toolResult":
					var tr ToolResult
					if last && m.Role == "user" && json.Unmarshal(raw, &tr) == nil {
						c.Results = append(c.Results, Result{Name: names[tr.ToolUseID], OK: tr.Status != "error", Output: resultText(tr.Content)})
					}
				}
			}
		}
		if m.Role != "user" {
			continue
		}
		c.HasUser = true
		c.UserHolds = holds
		if len(texts) > 0 {
			c.UserText = strings.Join(texts, "\n")
		}
	}
	return nil
}

// resultText is a toolResult's content as text: its text blocks, and its
// JSON blocks as JSON.
func resultText(content []ToolResultContent) string {
	var out []string
	for _, b := range content {
		switch {
		case b.Text != nil:
			out = append(out, *b.Text)
		case len(b.JSON) > 0:
			out = append(out, string(b.JSON))
		}
	}
	return strings.Join(out, "\n")
}

// readMessages reads an Anthropic Messages body (an invoke request).
func (c *Call) readMessages(body []byte) error {
	type block struct {
		Type      string          `json:"type"`
		Text      string          `json:"text"`
		ID        string          `json:"id"`
		Name      string          `json:"name"`
		ToolUseID string          `json:"tool_use_id"`
		Content   json.RawMessage `json:"content"`
		IsError   bool            `json:"is_error"`
	}
	var r struct {
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
		Tools []struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			InputSchema json.RawMessage `json:"input_schema"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return err
	}
	for _, t := range r.Tools {
		c.Tools = append(c.Tools, provider.ToolSpec{Name: t.Name, Description: t.Description, Schema: t.InputSchema})
	}
	// text is a content as text: a string, or its text blocks.
	var text func(raw json.RawMessage) string
	text = func(raw json.RawMessage) string {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return s
		}
		var bs []block
		_ = json.Unmarshal(raw, &bs)
		var out []string
		for _, b := range bs {
			if b.Type == "text" {
				out = append(out, b.Text)
			}
		}
		return strings.Join(out, "\n")
	}
	names := map[string]string{}
	for i, m := range r.Messages {
		var bs []block
		var s string
		holds := []string{}
		if json.Unmarshal(m.Content, &s) == nil {
			bs = []block{{Type: "text", Text: s}}
		} else {
			_ = json.Unmarshal(m.Content, &bs)
		}
		for _, b := range bs {
			holds = append(holds, b.Type)
			switch {
			case b.Type == "tool_use":
				names[b.ID] = b.Name
			case b.Type == "tool_result" && i == len(r.Messages)-1 && m.Role == "user":
				c.Results = append(c.Results, Result{Name: names[b.ToolUseID], OK: !b.IsError, Output: text(b.Content)})
			}
		}
		if m.Role != "user" {
			continue
		}
		c.HasUser = true
		c.UserHolds = holds
		if t := text(m.Content); t != "" {
			c.UserText = t
		}
	}
	return nil
}
