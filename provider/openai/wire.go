package openai

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/openmax/openmax/provider"
)

// The Chat Completions wire shapes, declared once for both directions: the
// client parses streamed chunks and whole completions with them, and the
// Encoder (and the fake provider through it) writes them. Field order is
// the order the API sends. Fields the parser never reads are json.RawMessage,
// so a server sending them with an unexpected type cannot fail a chunk.

// Chunk is one chat.completion.chunk of a stream, or (with Message in its
// choices) a whole chat.completion, or an error frame (Error set).
type Chunk struct {
	ID      json.RawMessage `json:"id,omitempty"`
	Object  json.RawMessage `json:"object,omitempty"`
	Created json.RawMessage `json:"created,omitempty"`
	Model   json.RawMessage `json:"model,omitempty"`
	Choices []Choice        `json:"choices"`
	Usage   *Usage          `json:"usage,omitempty"`
	// Error is the in-stream error frame of vLLM, llama.cpp and others.
	Error json.RawMessage `json:"error,omitempty"`
}

// Choice is one choice of a chunk (Delta) or of a completion (Message).
type Choice struct {
	Index        int     `json:"index"`
	Delta        *Delta  `json:"delta,omitempty"`   // streamed
	Message      *Delta  `json:"message,omitempty"` // non-streamed
	FinishReason *string `json:"finish_reason"`
}

// Delta is a streamed delta or the message of a whole completion.
type Delta struct {
	Role json.RawMessage `json:"role,omitempty"`
	// Content is a JSON string, null, or (Mistral and some proxies) an
	// array of parts.
	Content json.RawMessage `json:"content,omitempty"`
	// Reasoning and ReasoningContent are the non-standard reasoning fields
	// of vLLM, DeepSeek, llama.cpp, OpenRouter and others.
	Reasoning        *string         `json:"reasoning,omitempty"`
	ReasoningContent *string         `json:"reasoning_content,omitempty"`
	Refusal          *string         `json:"refusal,omitempty"`
	ToolCalls        []ToolCallDelta `json:"tool_calls,omitempty"`
}

// ToolCallDelta is a piece of a tool call, joined to the others by Index
// in a stream; in a whole completion each call comes once, whole.
type ToolCallDelta struct {
	Index    *int            `json:"index,omitempty"`
	ID       string          `json:"id,omitempty"`
	Type     json.RawMessage `json:"type,omitempty"`
	Function FunctionDelta   `json:"function"`
}

// FunctionDelta is the function of a ToolCallDelta. Arguments is a JSON
// string (some servers send a JSON object instead).
type FunctionDelta struct {
	Name      string          `json:"name,omitempty"`
	Arguments json.RawMessage `json:"arguments"`
}

// Usage is the token usage of a reply, in the last chunk of a stream.
type Usage struct {
	PromptTokens        int             `json:"prompt_tokens"`
	CompletionTokens    int             `json:"completion_tokens"`
	TotalTokens         json.RawMessage `json:"total_tokens,omitempty"`
	PromptTokensDetails *UsageDetails   `json:"prompt_tokens_details,omitempty"`
	// PromptCacheHitTokens is DeepSeek's name for cached prompt tokens.
	PromptCacheHitTokens *int `json:"prompt_cache_hit_tokens,omitempty"`
}

// UsageDetails details the prompt tokens.
type UsageDetails struct {
	CachedTokens *int `json:"cached_tokens"`
}

func (u *Usage) part() provider.Usage {
	p := provider.Usage{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens}
	switch {
	case u.PromptTokensDetails != nil && u.PromptTokensDetails.CachedTokens != nil:
		n := *u.PromptTokensDetails.CachedTokens
		p.CachedTokens = &n
	case u.PromptCacheHitTokens != nil:
		n := *u.PromptCacheHitTokens
		p.CachedTokens = &n
	}
	return p
}

// usageOf is u as the API reports it.
func usageOf(u provider.Usage) *Usage {
	out := &Usage{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens,
		TotalTokens: json.RawMessage(strconv.Itoa(u.PromptTokens + u.CompletionTokens))}
	if u.CachedTokens != nil {
		n := *u.CachedTokens
		out.PromptTokensDetails = &UsageDetails{CachedTokens: &n}
	}
	return out
}

// ErrorBody is the error object OpenAI sends: as an HTTP error body, or as
// an in-stream error frame.
type ErrorBody struct {
	Error ErrorDetail `json:"error"`
}

// ErrorDetail is the inside of an ErrorBody.
type ErrorDetail struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

// Path is the Chat Completions endpoint below the API root (BaseURL).
const Path = "/chat/completions"

// IsPath reports whether a request path is the Chat Completions endpoint
// under any root: it ends in Path.
func IsPath(p string) bool { return strings.HasSuffix(p, Path) }
