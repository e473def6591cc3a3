// Package provider defines the contract between the turn engine and a model
// vendor: a request carrying the conversation, and a reply streamed back as a
// sequence of typed parts. Vendor clients, offline providers and the fake
// provider live in sub-packages; none of them knows anything of the stdio wire.
package provider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
)

// Provider streams one model reply for a request.
//
// Stream returns a sequence of parts in arrival order. A reply that completed
// normally ends with exactly one Finish part. A reply that failed ends with an
// Error part. A sequence that simply stops with neither means the stream ended
// with no completion signal (truncation). Retry parts may appear before any
// TextDelta; everything the previous attempt streamed (thinking, usage) is void
// from that point and the reply starts over.
//
// Cancelling ctx must make the sequence end promptly. Implementations must be
// safe for use by one turn at a time; the engine never runs two streams of one
// session concurrently.
type Provider interface {
	Stream(ctx context.Context, req Request) iter.Seq[Part]
}

// Func adapts a function to the Provider interface.
type Func func(ctx context.Context, req Request) iter.Seq[Part]

// Stream calls f.
func (f Func) Stream(ctx context.Context, req Request) iter.Seq[Part] { return f(ctx, req) }

// Role names the author of a message.
type Role string

// Roles of transcript messages.
const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// Request is everything a provider needs to produce one reply.
type Request struct {
	Model    string
	System   string
	Messages []Message
	Tools    []ToolSpec
}

// Message is one entry of the conversation as sent to a model.
type Message struct {
	Role Role
	// Text is the user prompt, the assistant's reply text, or a tool's output.
	Text string
	// Thinking holds the assistant's reasoning blocks, kept so vendors that
	// require them (with their signatures) can receive them back.
	Thinking []Thinking
	// ToolCalls are the calls an assistant message made.
	ToolCalls []ToolCall
	// CallID links a tool message to the call it answers.
	CallID string
	// IsError marks a tool message whose call failed.
	IsError bool
	// Phase is the phase the vendor gave an assistant message (the
	// Responses API's commentary or final_answer), sent back with it as it
	// came; empty when the vendor gave none.
	Phase string
}

// Thinking is one block of model reasoning.
type Thinking struct {
	Text      string
	Signature string
}

// ToolCall is a model's request to run a tool.
type ToolCall struct {
	ID   string
	Name string
	// Namespace names the group of tools Name belongs to when the model
	// was offered namespaced tools (the Responses API's namespace tools, as
	// codex offers its dynamic tools); empty for a plain function.
	Namespace string
	// Args is the raw JSON the model produced; it may fail to parse.
	Args json.RawMessage
}

// ToolSpec describes a tool offered to the model.
type ToolSpec struct {
	Name        string
	Description string
	// Schema is the JSON Schema of the tool's arguments object.
	Schema json.RawMessage
}

// Part is one item of a streamed reply. The concrete types are TextDelta,
// ThinkingDelta, MessagePhase, ToolCallPart, UnrunCall, Usage, Finish, Error and Retry.
type Part interface{ isPart() }

// TextDelta is a fragment of reply text.
type TextDelta struct{ Text string }

// ThinkingDelta is a fragment of reasoning. Signature, when set, closes the
// current reasoning block with the vendor's signature.
type ThinkingDelta struct {
	Text      string
	Signature string
}

// MessagePhase is the phase the vendor gave the reply's message (the
// Responses API's commentary or final_answer); the engine keeps it on the
// assistant message so it goes back on the next request.
type MessagePhase struct{ Phase string }

// UnrunCall is a tool call a reply shows but that must not run, Reason
// saying why (a replay whose recording ends at the call: nothing recorded
// its result). The engine shows it, tool_start then a tool_end that is not
// ok and says it was not run, and neither dispatches it nor keeps it in the
// transcript.
type UnrunCall struct {
	Call   ToolCall
	Reason string
}

// ToolCallPart is a complete tool call (the arguments fully streamed).
type ToolCallPart struct{ Call ToolCall }

// Usage reports token accounting for the reply. CachedTokens is nil when the
// vendor did not say. ReasoningTokens is the part of CompletionTokens the
// model spent reasoning, nil when the vendor did not say.
type Usage struct {
	PromptTokens     int
	CompletionTokens int
	CachedTokens     *int
	ReasoningTokens  *int
}

// Finish is the completion signal, carrying the vendor's reason verbatim
// (stop, length, tool_calls, end_turn, tool_use, ...).
type Finish struct{ Reason string }

// Error ends a reply that failed. Wrap ErrIncomplete when the stream died
// without a completion signal (reset, unexpected EOF, idle timeout) rather
// than the vendor reporting a failure.
type Error struct{ Err error }

// Retry announces that the request is being resent: Attempt is the attempt
// about to go out of MaxAttempts, Reason what ended the previous one. It is
// yielded before the backoff wait.
type Retry struct {
	Attempt     int
	MaxAttempts int
	Reason      string
}

func (TextDelta) isPart()     {}
func (ThinkingDelta) isPart() {}
func (ToolCallPart) isPart()  {}
func (MessagePhase) isPart()  {}
func (UnrunCall) isPart()     {}
func (Usage) isPart()         {}
func (Finish) isPart()        {}
func (Error) isPart()         {}
func (Retry) isPart()         {}

// ErrIncomplete marks a reply stream that ended without a completion signal.
var ErrIncomplete = errors.New("stream ended without a completion signal")

// ErrLimit marks a reply the client cut off because it exceeded a client
// limit (a reply deadline, a body size cap, an SSE event or line cap). Such
// a reply is incomplete, so the engine ends the turn truncated, but it is
// never retried: the same request would most likely hit the same limit.
var ErrLimit = errors.New("client limit exceeded")

// LimitError is a reply cut off by a client limit. It matches both ErrLimit
// and ErrIncomplete under errors.Is.
type LimitError struct {
	// Limit names the limit, as its flag or field is known
	// (--max-reply-bytes, --reply-timeout, sse event).
	Limit string
	// Detail says what went over it ("the response body passed 64 MiB").
	Detail string
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("%s: %s (%s)", ErrLimit, e.Detail, e.Limit)
}

// Unwrap makes a LimitError an ErrLimit and an ErrIncomplete.
func (e *LimitError) Unwrap() []error { return []error{ErrLimit, ErrIncomplete} }
