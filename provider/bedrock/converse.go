package bedrock

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/openmax/openmax/provider"
	"github.com/openmax/openmax/provider/bedrock/eventstream"
	"github.com/openmax/openmax/provider/internal/wirejson"
)

// The ConverseStream wire. The request shapes below are the ones the
// client writes (and ReadRequest reads back); the event shapes are shared
// by the parser and the encoder, with the fields in the order Bedrock
// writes them (alphabetical).

// ConverseRequest is the body of a ConverseStream request.
type ConverseRequest struct {
	Messages        []ConverseMessage `json:"messages"`
	System          []SystemBlock     `json:"system,omitempty"`
	InferenceConfig *InferenceConfig  `json:"inferenceConfig,omitempty"`
	ToolConfig      *ToolConfig       `json:"toolConfig,omitempty"`
}

// ConverseMessage is one turn of a Converse conversation.
type ConverseMessage struct {
	Role    string         `json:"role"`
	Content []ContentBlock `json:"content"`
}

// ContentBlock is one block of a turn: exactly one field is set.
type ContentBlock struct {
	Text             *string           `json:"text,omitempty"`
	ReasoningContent *ReasoningContent `json:"reasoningContent,omitempty"`
	ToolUse          *ToolUse          `json:"toolUse,omitempty"`
	ToolResult       *ToolResult       `json:"toolResult,omitempty"`
}

// ReasoningContent is a reasoning block sent back: its text with the
// model's signature, or the opaque redacted form (base64).
type ReasoningContent struct {
	ReasoningText   *ReasoningText `json:"reasoningText,omitempty"`
	RedactedContent string         `json:"redactedContent,omitempty"`
}

// ReasoningText is the text and signature of a reasoning block.
type ReasoningText struct {
	Text      string `json:"text"`
	Signature string `json:"signature,omitempty"`
}

// ToolUse is a tool call of an assistant turn; Input is a JSON object.
type ToolUse struct {
	ToolUseID string          `json:"toolUseId"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
}

// ToolResult answers a tool call: its content blocks (text or JSON) and
// its status, success or error.
type ToolResult struct {
	ToolUseID string              `json:"toolUseId"`
	Content   []ToolResultContent `json:"content"`
	Status    string              `json:"status,omitempty"`
}

// ToolResultContent is one block of a tool result.
type ToolResultContent struct {
	Text *string         `json:"text,omitempty"`
	JSON json.RawMessage `json:"json,omitempty"`
}

// SystemBlock is one block of the system prompt.
type SystemBlock struct {
	Text string `json:"text"`
}

// InferenceConfig holds the generation settings.
type InferenceConfig struct {
	MaxTokens int `json:"maxTokens,omitempty"`
}

// ToolConfig offers the tools.
type ToolConfig struct {
	Tools []Tool `json:"tools"`
}

// Tool is one offered tool.
type Tool struct {
	ToolSpec ToolSpec `json:"toolSpec"`
}

// ToolSpec describes a tool: InputSchema.JSON is its JSON Schema.
type ToolSpec struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	InputSchema struct {
		JSON json.RawMessage `json:"json"`
	} `json:"inputSchema"`
}

// redactedPrefix marks a provider.Thinking that carries a redacted
// reasoning block: its Signature is this prefix followed by the block's
// redactedContent (base64), and its Text is empty.
const redactedPrefix = "bedrock-redacted-reasoning:"

// converseBody encodes req as a ConverseStream request.
func converseBody(req provider.Request, maxTokens int) ([]byte, error) {
	w := ConverseRequest{Messages: converseMessages(req.Messages)}
	if req.System != "" {
		w.System = []SystemBlock{{Text: req.System}}
	}
	if maxTokens > 0 {
		w.InferenceConfig = &InferenceConfig{MaxTokens: maxTokens}
	}
	for _, t := range req.Tools {
		schema := t.Schema
		if len(bytes.TrimSpace(schema)) == 0 {
			schema = json.RawMessage(`{"type":"object","properties":{}}`)
		} else if !json.Valid(schema) {
			return nil, fmt.Errorf("bedrock: tool %q has an invalid JSON schema", t.Name)
		}
		if w.ToolConfig == nil {
			w.ToolConfig = &ToolConfig{}
		}
		spec := ToolSpec{Name: t.Name, Description: t.Description}
		spec.InputSchema.JSON = schema
		w.ToolConfig.Tools = append(w.ToolConfig.Tools, Tool{ToolSpec: spec})
	}
	return wirejson.Marshal(w), nil
}

// converseMessages maps the transcript onto Converse's alternating turns:
// tool results become toolResult blocks of a user turn, and consecutive
// user-side messages share one user turn, the tool results first.
func converseMessages(in []provider.Message) []ConverseMessage {
	var out []ConverseMessage
	for _, m := range in {
		var role string
		var blocks []ContentBlock
		switch m.Role {
		case provider.RoleAssistant:
			role = "assistant"
			blocks = assistantBlocks(m)
			if len(blocks) == 0 {
				continue // Converse refuses an empty turn
			}
		case provider.RoleTool:
			role = "user"
			status := "success"
			if m.IsError {
				status = "error"
			}
			text := m.Text
			blocks = []ContentBlock{{ToolResult: &ToolResult{ToolUseID: m.CallID, Content: []ToolResultContent{{Text: &text}}, Status: status}}}
		default:
			role = "user"
			text := m.Text
			blocks = []ContentBlock{{Text: &text}}
		}
		if len(out) > 0 && out[len(out)-1].Role == role {
			last := &out[len(out)-1]
			last.Content = append(last.Content, blocks...)
			continue
		}
		out = append(out, ConverseMessage{Role: role, Content: blocks})
	}
	if out == nil {
		out = []ConverseMessage{}
	}
	return out
}

// assistantBlocks is an assistant turn: its signed reasoning first, then
// its text, then its tool calls.
func assistantBlocks(m provider.Message) []ContentBlock {
	var blocks []ContentBlock
	for _, t := range m.Thinking {
		switch {
		case t.Text == "" && strings.HasPrefix(t.Signature, redactedPrefix):
			blocks = append(blocks, ContentBlock{ReasoningContent: &ReasoningContent{RedactedContent: strings.TrimPrefix(t.Signature, redactedPrefix)}})
		case t.Signature == "" || strings.Contains(t.Signature, ":"):
			// Unsigned reasoning (another vendor's, or a block cut short)
			// cannot be verified and would be refused: leave it out, and a
			// marker of another vendor's redacted block with it (real
			// signatures are base64, with no ':').
		default:
			blocks = append(blocks, ContentBlock{ReasoningContent: &ReasoningContent{ReasoningText: &ReasoningText{Text: t.Text, Signature: t.Signature}}})
		}
	}
	if m.Text != "" {
		text := m.Text
		blocks = append(blocks, ContentBlock{Text: &text})
	}
	for _, tc := range m.ToolCalls {
		blocks = append(blocks, ContentBlock{ToolUse: &ToolUse{ToolUseID: tc.ID, Name: tc.Name, Input: wirejson.Object(tc.Args)}})
	}
	return blocks
}

// ConverseEvent is the payload of any ConverseStream event, as a reader
// decodes it; each event type sets its own fields:
//
//	messageStart       Role
//	contentBlockStart  ContentBlockIndex, Start (toolUse: id and name)
//	contentBlockDelta  ContentBlockIndex, Delta (text, toolUse.input as a
//	                   string piece, reasoningContent text, signature or
//	                   redactedContent)
//	contentBlockStop   ContentBlockIndex
//	messageStop        StopReason
//	metadata           Usage, Metrics
//
// Every payload may carry P, random padding, which means nothing.
type ConverseEvent struct {
	ContentBlockIndex *int        `json:"contentBlockIndex,omitempty"`
	Delta             *BlockDelta `json:"delta,omitempty"`
	Metrics           *Metrics    `json:"metrics,omitempty"`
	P                 string      `json:"p,omitempty"`
	Role              string      `json:"role,omitempty"`
	Start             *BlockStart `json:"start,omitempty"`
	StopReason        string      `json:"stopReason,omitempty"`
	Usage             *Usage      `json:"usage,omitempty"`
}

// BlockStart is what a contentBlockStart opens.
type BlockStart struct {
	ToolUse *ToolUseStart `json:"toolUse,omitempty"`
}

// ToolUseStart names the tool call a block holds.
type ToolUseStart struct {
	Name      string `json:"name"`
	ToolUseID string `json:"toolUseId"`
}

// BlockDelta is a contentBlockDelta's delta: one field is set.
type BlockDelta struct {
	ReasoningContent *ReasoningDelta `json:"reasoningContent,omitempty"`
	Text             *string         `json:"text,omitempty"`
	ToolUse          *ToolUseDelta   `json:"toolUse,omitempty"`
}

// ReasoningDelta is a piece of reasoning: text, the signature that closes
// the block, or the block's redacted form.
type ReasoningDelta struct {
	RedactedContent string `json:"redactedContent,omitempty"`
	Signature       string `json:"signature,omitempty"`
	Text            string `json:"text,omitempty"`
}

// ToolUseDelta is a piece of a tool call's input JSON, as a string.
type ToolUseDelta struct {
	Input string `json:"input"`
}

// Usage is the token usage of a metadata event. Bedrock counts the cache
// apart: inputTokens leaves out the tokens read from and written to the
// prompt cache, which the cache counts give.
type Usage struct {
	CacheReadInputTokens  *int `json:"cacheReadInputTokens,omitempty"`
	CacheWriteInputTokens *int `json:"cacheWriteInputTokens,omitempty"`
	InputTokens           int  `json:"inputTokens"`
	OutputTokens          int  `json:"outputTokens"`
	TotalTokens           int  `json:"totalTokens"`
}

// Metrics are a metadata event's timings.
type Metrics struct {
	LatencyMs int `json:"latencyMs"`
}

// providerUsage is u the provider's way: the prompt counts the whole
// prompt, cache reads and writes included; CachedTokens is the reads.
func (u *Usage) providerUsage() provider.Usage {
	prompt := u.InputTokens
	var cached *int
	if u.CacheReadInputTokens != nil {
		c := *u.CacheReadInputTokens
		cached = &c
		prompt += c
	}
	if u.CacheWriteInputTokens != nil {
		prompt += *u.CacheWriteInputTokens
	}
	return provider.Usage{PromptTokens: prompt, CompletionTokens: u.OutputTokens, CachedTokens: cached}
}

// StopReasons are the stop reasons of a Converse messageStop. Each is a
// completed reply and goes out verbatim as the Finish reason, the way
// provider/anthropic passes Anthropic's (Converse uses Anthropic's
// vocabulary and adds two):
//
//	end_turn              the model finished its turn
//	tool_use              the model called tools: the calls run
//	max_tokens            cut at the token limit; the text is kept
//	stop_sequence         a stop sequence was generated
//	guardrail_intervened  a guardrail replaced or blocked the output; the
//	                      text that streamed is the guardrail's message
//	content_filtered      the content filter stopped the output
//
// Bedrock has no failure stop reason: a failure is an exception.
var StopReasons = []string{"end_turn", "tool_use", "max_tokens", "stop_sequence", "guardrail_intervened", "content_filtered"}

// cblock is one content block of a reply, by index.
type cblock struct {
	tool     bool
	id, name string
	input    strings.Builder
}

// converseState folds Converse events into the reply.
type converseState struct {
	blocks   map[int]*cblock
	usage    *provider.Usage
	stop     string
	stopped  bool // messageStop came
	nEvents  int
	lastType string
}

func newConverseState() *converseState { return &converseState{blocks: map[int]*cblock{}} }

func (st *converseState) block(i int) *cblock {
	b := st.blocks[i]
	if b == nil {
		b = &cblock{}
		st.blocks[i] = b
	}
	return b
}

// apply folds one message of the stream. It returns the parts to yield,
// whether the reply is complete, or the failure that ends it.
func (st *converseState) apply(m eventstream.Message) ([]provider.Part, bool, error) {
	if se := exceptionError(m); se != nil {
		return nil, false, se
	}
	typ := m.String(":event-type")
	st.nEvents++
	st.lastType = typ
	switch typ {
	case "messageStart", "contentBlockStart", "contentBlockDelta", "contentBlockStop", "messageStop", "metadata":
	default:
		return nil, false, nil // an event Bedrock adds later
	}
	var e ConverseEvent
	if err := json.Unmarshal(m.Payload, &e); err != nil {
		return nil, false, fmt.Errorf("bedrock: malformed %s event: %v", typ, err)
	}
	idx := 0
	if e.ContentBlockIndex != nil {
		idx = *e.ContentBlockIndex
	}
	switch typ {
	case "contentBlockStart":
		if e.Start != nil && e.Start.ToolUse != nil {
			b := st.block(idx)
			b.tool, b.id, b.name = true, e.Start.ToolUse.ToolUseID, e.Start.ToolUse.Name
		}
	case "contentBlockDelta":
		d := e.Delta
		switch {
		case d == nil:
		case d.Text != nil:
			if *d.Text != "" {
				return []provider.Part{provider.TextDelta{Text: *d.Text}}, false, nil
			}
		case d.ToolUse != nil:
			b := st.block(idx)
			b.tool = true
			b.input.WriteString(d.ToolUse.Input)
		case d.ReasoningContent != nil:
			r := d.ReasoningContent
			var parts []provider.Part
			if r.Text != "" {
				parts = append(parts, provider.ThinkingDelta{Text: r.Text})
			}
			if r.Signature != "" {
				parts = append(parts, provider.ThinkingDelta{Signature: r.Signature})
			}
			if r.RedactedContent != "" {
				parts = append(parts, provider.ThinkingDelta{Signature: redactedPrefix + r.RedactedContent})
			}
			return parts, false, nil
		}
	case "messageStop":
		st.stop, st.stopped = e.StopReason, true
	case "metadata":
		if e.Usage != nil {
			u := e.Usage.providerUsage()
			st.usage = &u
		}
		if st.stopped {
			return st.finish(), true, nil
		}
	}
	return nil, false, nil
}

// finish is the completed reply's tail: the tool calls in block order, the
// usage and the stop reason.
func (st *converseState) finish() []provider.Part {
	var parts []provider.Part
	for _, i := range slices.Sorted(maps.Keys(st.blocks)) {
		b := st.blocks[i]
		if !b.tool {
			continue
		}
		args := json.RawMessage(b.input.String())
		if strings.TrimSpace(b.input.String()) == "" {
			args = json.RawMessage(`{}`)
		}
		parts = append(parts, provider.ToolCallPart{Call: provider.ToolCall{ID: b.id, Name: b.name, Args: args}})
	}
	if st.usage != nil {
		parts = append(parts, *st.usage)
	}
	return append(parts, provider.Finish{Reason: st.stop})
}

// where says how far a stream got.
func where(n int, last string) string {
	if n == 0 {
		return "before any event"
	}
	return fmt.Sprintf("after %d events (last %s)", n, last)
}

// readFailure is the error of a stream that ended or broke before the
// reply completed; signal names the event that completes it.
func readFailure(err error, signal string, n int, last string) error {
	at := where(n, last)
	switch {
	case errors.Is(err, io.EOF):
		return fmt.Errorf("%w: the response ended without %s, %s", provider.ErrIncomplete, signal, at)
	case errors.Is(err, eventstream.ErrTruncated):
		return fmt.Errorf("%w: the response ended without %s, %s, inside a message (%w)", provider.ErrIncomplete, signal, at, err)
	case errors.Is(err, eventstream.ErrMalformed):
		return fmt.Errorf("bedrock: %w, %s", err, at)
	case errors.Is(err, provider.ErrIncomplete):
		// The idle watchdog or a client limit: incomplete either way.
		return fmt.Errorf("%w, %s", err, at)
	}
	return fmt.Errorf("%w: reading the response failed %s: %w", provider.ErrIncomplete, at, err)
}

// end is what the client yields when the stream ends or breaks with err
// (io.EOF at a clean end) before the reply is over: once messageStop
// came, the reply is complete, and whatever broke after it cost only the
// usage (which follows in metadata); before, the reply is incomplete (or
// malformed).
func (st *converseState) end(err error) []provider.Part {
	if st.stopped {
		return st.finish()
	}
	return []provider.Part{provider.Error{Err: readFailure(err, "messageStop", st.nEvents, st.lastType)}}
}

// message folds one message into the reply: the parts the client yields
// for it (an Error part for a failure), and whether the reply is over.
func (st *converseState) message(m eventstream.Message) ([]provider.Part, bool) {
	parts, done, err := st.apply(m)
	if err != nil {
		return append(parts, provider.Error{Err: err}), true
	}
	return parts, done
}
