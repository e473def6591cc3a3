package gemini

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode"

	"github.com/openmax/openmax/provider"
)

// RequestInfo is what a recorded generateContent request says, as far as
// deriving a replayable session needs it.
type RequestInfo struct {
	// Model is the model the path names; Stream whether it asked for a
	// stream.
	Model  string
	Stream bool
	// System is the text of the systemInstruction.
	System string
	// LastUserText is the text of the last user turn that has any (its
	// text parts joined by a newline; thoughts are not the user's).
	LastUserText string
	// HasUser reports whether the request holds a user turn at all, and
	// UserHolds what kinds of part its last user turn holds, as the wire
	// names them (text, functionResponse, inlineData, fileData, ...), each
	// once, in order.
	HasUser   bool
	UserHolds []string
	// Tools are the function declarations offered, their schema from
	// parametersJsonSchema, or else from parameters (Google's OpenAPI
	// subset, its upper-case type names put in JSON Schema's lower case).
	Tools []provider.ToolSpec
	// Results are the tool results the request carries back: the
	// functionResponse parts of its last turn when that is the user's.
	Results []ToolResult
}

// ToolResult is one functionResponse sent back.
type ToolResult struct {
	CallID, Name string
	// Output is the response's text: the value of its "output" (or, for a
	// failure, "error") member, or of its only member, when a string; the
	// JSON of that value or of the whole response otherwise.
	Output  string
	IsError bool
}

// ReadRequest reads a recorded request: its path (with or without a
// query) and its JSON body, whose member names may be the API's
// lowerCamelCase or the snake_case it also accepts (the Python SDKs send
// parameters_json_schema).
func ReadRequest(path string, body []byte) (RequestInfo, error) {
	var info RequestInfo
	model, stream, ok := ParsePath(path)
	if !ok {
		return info, fmt.Errorf("gemini: %q is not a generateContent path", path)
	}
	info.Model, info.Stream = model, stream
	top, err := object(body)
	if err != nil {
		return info, fmt.Errorf("gemini: the request body: %w", err)
	}
	if sys := member(top, "systemInstruction"); sys != nil {
		c, err := readContent(sys)
		if err != nil {
			return info, fmt.Errorf("gemini: systemInstruction: %w", err)
		}
		info.System = c.text()
	}
	var raws []json.RawMessage
	if err := unmarshalMember(top, "contents", &raws); err != nil {
		return info, fmt.Errorf("gemini: contents: %w", err)
	}
	var contents []readContentT
	for i, r := range raws {
		c, err := readContent(r)
		if err != nil {
			return info, fmt.Errorf("gemini: contents[%d]: %w", i, err)
		}
		contents = append(contents, c)
		if c.role != "model" {
			info.HasUser, info.UserHolds = true, c.holds
			if t := c.text(); t != "" {
				info.LastUserText = t
			}
		}
	}
	if n := len(contents); n > 0 && contents[n-1].role != "model" {
		info.Results = contents[n-1].results
	}
	var tools []json.RawMessage
	if err := unmarshalMember(top, "tools", &tools); err != nil {
		return info, fmt.Errorf("gemini: tools: %w", err)
	}
	for i, t := range tools {
		to, err := object(t)
		if err != nil {
			return info, fmt.Errorf("gemini: tools[%d]: %w", i, err)
		}
		var decls []json.RawMessage
		if err := unmarshalMember(to, "functionDeclarations", &decls); err != nil {
			return info, fmt.Errorf("gemini: tools[%d]: %w", i, err)
		}
		for j, d := range decls {
			spec, err := readDeclaration(d)
			if err != nil {
				return info, fmt.Errorf("gemini: tools[%d].functionDeclarations[%d]: %w", i, j, err)
			}
			info.Tools = append(info.Tools, spec)
		}
	}
	return info, nil
}

// readContentT is a content as ReadRequest needs it.
type readContentT struct {
	role    string
	texts   []string
	results []ToolResult
	holds   []string // the kinds of its parts, each once
}

func (c readContentT) text() string { return strings.Join(c.texts, "\n") }

func readContent(raw json.RawMessage) (readContentT, error) {
	var c readContentT
	m, err := object(raw)
	if err != nil {
		return c, err
	}
	if err := unmarshalMember(m, "role", &c.role); err != nil {
		return c, err
	}
	var parts []json.RawMessage
	if err := unmarshalMember(m, "parts", &parts); err != nil {
		return c, err
	}
	for _, p := range parts {
		pm, err := object(p)
		if err != nil {
			return c, err
		}
		for _, k := range slices.Sorted(maps.Keys(pm)) {
			if kind := partKind(k); kind != "" && !slices.Contains(c.holds, kind) {
				c.holds = append(c.holds, kind)
			}
		}
		var thought bool
		var text *string
		if err := unmarshalMember(pm, "thought", &thought); err != nil {
			return c, err
		}
		if err := unmarshalMember(pm, "text", &text); err != nil {
			return c, err
		}
		if text != nil && !thought && *text != "" {
			c.texts = append(c.texts, *text)
		}
		if fr := member(pm, "functionResponse"); fr != nil {
			r, err := readResult(fr)
			if err != nil {
				return c, fmt.Errorf("functionResponse: %w", err)
			}
			c.results = append(c.results, r)
		}
	}
	return c, nil
}

// partKind is the kind of part a member names (in either spelling), ""
// for a member that is no kind (thought, thoughtSignature, ...).
func partKind(member string) string {
	for _, k := range []string{"text", "inlineData", "fileData", "functionCall", "functionResponse", "executableCode", "codeExecutionResult"} {
		if member == k || member == snake(k) {
			return k
		}
	}
	return ""
}

func readResult(raw json.RawMessage) (ToolResult, error) {
	var r ToolResult
	m, err := object(raw)
	if err != nil {
		return r, err
	}
	if err := unmarshalMember(m, "id", &r.CallID); err != nil {
		return r, err
	}
	if err := unmarshalMember(m, "name", &r.Name); err != nil {
		return r, err
	}
	resp := member(m, "response")
	var obj map[string]json.RawMessage
	if resp == nil || json.Unmarshal(resp, &obj) != nil {
		r.Output = compactJSON(resp)
		return r, nil
	}
	switch output, failure := obj["output"], obj["error"]; {
	case output != nil:
		r.Output = valueText(output)
	case failure != nil:
		r.Output, r.IsError = valueText(failure), true
	case len(obj) == 1:
		for _, only := range obj {
			r.Output = valueText(only)
		}
	default:
		r.Output = compactJSON(resp)
	}
	return r, nil
}

func readDeclaration(raw json.RawMessage) (provider.ToolSpec, error) {
	var spec provider.ToolSpec
	m, err := object(raw)
	if err != nil {
		return spec, err
	}
	if err := unmarshalMember(m, "name", &spec.Name); err != nil {
		return spec, err
	}
	if err := unmarshalMember(m, "description", &spec.Description); err != nil {
		return spec, err
	}
	if s := member(m, "parametersJsonSchema"); s != nil {
		spec.Schema = json.RawMessage(compactJSON(s))
	} else if s := member(m, "parameters"); s != nil {
		var v any
		if err := json.Unmarshal(s, &v); err != nil {
			return spec, fmt.Errorf("parameters: %w", err)
		}
		lowerTypes(v)
		b, _ := json.Marshal(v)
		spec.Schema = b
	}
	return spec, nil
}

// lowerTypes puts the upper-case type names of Google's OpenAPI subset
// (STRING, OBJECT, ...) in JSON Schema's lower case, wherever a "type"
// member holds one.
func lowerTypes(v any) {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if s, ok := x.(string); ok && k == "type" && s == strings.ToUpper(s) {
				v[k] = strings.ToLower(s)
				continue
			}
			lowerTypes(x)
		}
	case []any:
		for _, x := range v {
			lowerTypes(x)
		}
	}
}

// valueText is a JSON value as text: a string's own text, any other
// value's compact JSON.
func valueText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return compactJSON(raw)
}

func compactJSON(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}

// object decodes a JSON object into its members.
func object(raw json.RawMessage) (map[string]json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	if m == nil {
		return nil, errors.New("null where an object belongs")
	}
	return m, nil
}

// member is the member of m named camel, or its snake_case name; nil when
// absent or null.
func member(m map[string]json.RawMessage, camel string) json.RawMessage {
	v, ok := m[camel]
	if !ok {
		v = m[snake(camel)]
	}
	if bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
		return nil
	}
	return v
}

// unmarshalMember decodes the member of m named camel (or its snake_case
// name) into dst, leaving dst alone when it is absent.
func unmarshalMember(m map[string]json.RawMessage, camel string, dst any) error {
	v := member(m, camel)
	if v == nil {
		return nil
	}
	if err := json.Unmarshal(v, dst); err != nil {
		return fmt.Errorf("%s: %w", camel, err)
	}
	return nil
}

// snake is a lowerCamelCase name in snake_case.
func snake(camel string) string {
	var b strings.Builder
	for _, r := range camel {
		if unicode.IsUpper(r) {
			b.WriteByte('_')
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}
