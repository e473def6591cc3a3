// Package responses is the OpenAI Responses API (POST /v1/responses) both
// ways: the streaming client of the live harness, and the encoder the fake
// provider and the cassette tools render replies with. The wire is typed
// Server-Sent Events: every event names its type (response.created,
// response.output_text.delta, response.completed, ...), and a reply is
// complete only when a terminal response event (completed, or incomplete)
// arrives. One Stream call is one attempt; retries belong to
// provider/retry, which decides from the failure types of package
// provider, so every failure is classified here as in package openai.
package responses

import (
	"encoding/json"
	"strings"
)

// The Responses wire shapes, declared once for both directions. Fields the
// parser never reads are json.RawMessage, so a server sending them with an
// unexpected type cannot fail an event. Slices that the API always sends,
// even empty, are tagged omitzero: nil leaves them out, an empty non-nil
// slice writes [].

// Event is one event of a Responses stream. Which fields are set depends
// on Type; the event: line of the SSE frame repeats it.
type Event struct {
	Type           string `json:"type"`
	SequenceNumber int64  `json:"sequence_number"`

	// Response is the response object of response.created,
	// response.in_progress and the terminal events response.completed,
	// response.incomplete and response.failed.
	Response *Response `json:"response,omitempty"`

	// OutputIndex, ItemID, ContentIndex and SummaryIndex locate the item,
	// content part or reasoning summary part an event is about.
	OutputIndex  *int   `json:"output_index,omitempty"`
	ItemID       string `json:"item_id,omitempty"`
	ContentIndex *int   `json:"content_index,omitempty"`
	SummaryIndex *int   `json:"summary_index,omitempty"`

	// Item is the output item of response.output_item.added and .done.
	Item *Item `json:"item,omitempty"`
	// Part is the content part or summary part of the *_part.added and
	// *_part.done events.
	Part *Content `json:"part,omitempty"`

	// Delta is the text of every *.delta event.
	Delta *string `json:"delta,omitempty"`
	// Text is the whole text of response.output_text.done and
	// response.reasoning_summary_text.done.
	Text *string `json:"text,omitempty"`
	// Arguments are the whole arguments of
	// response.function_call_arguments.done.
	Arguments *string `json:"arguments,omitempty"`
	// Logprobs ride on text deltas; the client ignores them.
	Logprobs json.RawMessage `json:"logprobs,omitempty"`

	// Code, Message and Param are the fields of an error event (type
	// "error"). Code is a string, a number or null.
	Code    json.RawMessage `json:"code,omitempty"`
	Message *string         `json:"message,omitempty"`
	Param   json.RawMessage `json:"param,omitempty"`
}

// Event types the client acts on. Others (response.created,
// response.in_progress, *.added, *.done of parts) carry nothing the client
// needs beyond what the deltas and item events already said.
const (
	EventCreated            = "response.created"
	EventInProgress         = "response.in_progress"
	EventCompleted          = "response.completed"
	EventIncomplete         = "response.incomplete"
	EventFailed             = "response.failed"
	EventError              = "error"
	EventItemAdded          = "response.output_item.added"
	EventItemDone           = "response.output_item.done"
	EventContentPartAdded   = "response.content_part.added"
	EventContentPartDone    = "response.content_part.done"
	EventTextDelta          = "response.output_text.delta"
	EventTextDone           = "response.output_text.done"
	EventRefusalDelta       = "response.refusal.delta"
	EventArgumentsDelta     = "response.function_call_arguments.delta"
	EventArgumentsDone      = "response.function_call_arguments.done"
	EventSummaryPartAdded   = "response.reasoning_summary_part.added"
	EventSummaryPartDone    = "response.reasoning_summary_part.done"
	EventSummaryTextDelta   = "response.reasoning_summary_text.delta"
	EventSummaryTextDone    = "response.reasoning_summary_text.done"
	EventReasoningTextDelta = "response.reasoning_text.delta"
	EventReasoningTextDone  = "response.reasoning_text.done"
)

// Response is the response object: in the lifecycle events of a stream,
// and the whole body of a non-streamed reply.
type Response struct {
	ID        string          `json:"id"`
	Object    string          `json:"object,omitempty"`
	CreatedAt json.RawMessage `json:"created_at,omitempty"`
	// Status is in_progress, completed, incomplete, failed, cancelled or
	// queued.
	Status            string             `json:"status,omitempty"`
	Error             *ResponseError     `json:"error,omitempty"`
	IncompleteDetails *IncompleteDetails `json:"incomplete_details,omitempty"`
	Model             string             `json:"model,omitempty"`
	Output            []Item             `json:"output,omitzero"`
	Usage             *Usage             `json:"usage,omitempty"`
}

// ResponseError is the error of a failed response (response.failed).
// Code is a string such as server_error or rate_limit_exceeded.
type ResponseError struct {
	Code    json.RawMessage `json:"code,omitempty"`
	Message string          `json:"message"`
}

// IncompleteDetails says why a response is incomplete: max_output_tokens
// or content_filter.
type IncompleteDetails struct {
	Reason string `json:"reason"`
}

// Item is one output item (message, function_call, reasoning), or one input
// item of a request (the same three, plus function_call_output and the
// role messages of the conversation).
type Item struct {
	// ID is the item's server id; requests that send items back with
	// store:false leave it out.
	ID     string `json:"id,omitempty"`
	Type   string `json:"type,omitempty"`
	Status string `json:"status,omitempty"`

	// Role and Content make a message.
	Role    string    `json:"role,omitempty"`
	Content []Content `json:"content,omitzero"`
	// Phase is an assistant message's phase (commentary, final_answer):
	// newer models give it, and want it back on the next request.
	Phase string `json:"phase,omitempty"`

	// CallID, Name and Arguments make a function_call; CallID and Output a
	// function_call_output.
	CallID string `json:"call_id,omitempty"`
	Name   string `json:"name,omitempty"`
	// Namespace is the namespace tool a function_call's Name belongs to.
	Namespace string  `json:"namespace,omitempty"`
	Arguments *string `json:"arguments,omitempty"`
	Output    *string `json:"output,omitempty"`

	// Summary and EncryptedContent make a reasoning item. EncryptedContent
	// is only sent when the request asked for reasoning.encrypted_content;
	// it must go back whole on the next request.
	Summary          []Content `json:"summary,omitzero"`
	EncryptedContent *string   `json:"encrypted_content,omitempty"`
}

// Content is a content part of a message (input_text, output_text,
// refusal) or a summary part of a reasoning item (summary_text).
type Content struct {
	Type        string          `json:"type"`
	Text        *string         `json:"text,omitempty"`
	Refusal     *string         `json:"refusal,omitempty"`
	Annotations json.RawMessage `json:"annotations,omitempty"`
	Logprobs    json.RawMessage `json:"logprobs,omitempty"`
}

// Usage is the token accounting of a response, in its terminal event.
type Usage struct {
	InputTokens         int            `json:"input_tokens"`
	InputTokensDetails  *InputDetails  `json:"input_tokens_details,omitempty"`
	OutputTokens        int            `json:"output_tokens"`
	OutputTokensDetails *OutputDetails `json:"output_tokens_details,omitempty"`
	TotalTokens         int            `json:"total_tokens"`
}

// InputDetails details the input tokens.
type InputDetails struct {
	CachedTokens int `json:"cached_tokens"`
}

// OutputDetails details the output tokens.
type OutputDetails struct {
	ReasoningTokens int `json:"reasoning_tokens"`
}

// Request is the body of a POST to Path.
type Request struct {
	Model        string `json:"model"`
	Instructions string `json:"instructions,omitempty"`
	Input        []Item `json:"input"`
	Tools        []Tool `json:"tools,omitempty"`
	// ToolChoice is "auto" whenever tools are offered.
	ToolChoice string `json:"tool_choice,omitempty"`
	// ParallelToolCalls lets the model call several tools in one reply.
	ParallelToolCalls *bool `json:"parallel_tool_calls,omitempty"`
	Stream            bool  `json:"stream"`
	// Store false keeps the conversation off OpenAI's servers: every
	// request carries the whole conversation, reasoning included.
	Store *bool `json:"store,omitempty"`
	// Include asks for reasoning.encrypted_content, so reasoning items can
	// be sent back with Store false.
	Include         []string        `json:"include,omitempty"`
	MaxOutputTokens *int            `json:"max_output_tokens,omitempty"`
	Reasoning       json.RawMessage `json:"reasoning,omitempty"`
}

// Tool is a function tool offered to the model.
type Tool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters"`
	Strict      bool            `json:"strict"`
}

// Path is the Responses endpoint below the API root (BaseURL).
const Path = "/responses"

// IsPath reports whether a request path is the Responses endpoint under
// any root: it ends in Path.
func IsPath(p string) bool { return strings.HasSuffix(p, Path) }
