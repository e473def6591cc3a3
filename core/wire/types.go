package wire

import "encoding/json"

// Protocol identity, carried by hello.
const (
	Proto           = "openmax-stdio/6"
	ProtocolVersion = 6
)

// Struct tags understood by the field derivation (fields.go):
//
//	json:"name[,omitempty]"  field name; omitempty makes the field optional
//	doc:"..."                the field's description in --spec
//	enum:"a,b,c"             the legal string values
//	nonempty:"true"          the string must not be empty
//	const:"v"                the value must equal v (compared as JSON text)
//
// An int field is a non-negative integer; *int is such an integer or null; a
// json.RawMessage field is a JSON object.

// ---- Events (stdout, carry session_id then type) ----

// Event is one event line's payload. The wire adds session_id and type.
type Event interface{ EventType() string }

// Token is a delta of reply text.
type Token struct {
	Text string `json:"text" doc:"the next piece of reply text"`
}

// Thinking is a delta of model reasoning.
type Thinking struct {
	Text string `json:"text" doc:"the next piece of reasoning"`
}

// MessageDone closes a run of tokens.
type MessageDone struct {
	Text string `json:"text" doc:"the complete text of the run of tokens it closes"`

	// quoted, when set (MessageDoneQuoted), is Text encoded as JSON
	// string content, in pieces, built while the text streamed: the line
	// is written from them, not by encoding Text again.
	quoted *[][]byte
}

// MessageDoneQuoted is the MessageDone of text whose encoding as JSON
// string content (internal/jsonstr, no HTML escaping, no quotes) is the
// concatenation of quoted, built piece by piece as the text streamed (a
// jsonstr.Escaper): its line is the line of MessageDone{Text: text},
// written without encoding a long text a second time at the end of a
// reply, and without joining the pieces where the Writer's LineWriter
// takes a line in pieces (PieceWriter). The pieces must not change
// afterwards. Pieces shorter in all than text cannot be its encoding and
// are ignored.
func MessageDoneQuoted(text string, quoted ...[]byte) MessageDone {
	n := 0
	for _, q := range quoted {
		n += len(q)
	}
	if n < len(text) {
		return MessageDone{Text: text}
	}
	return MessageDone{Text: text, quoted: &quoted}
}

// Budget reports how full the context window is.
type Budget struct {
	UsedTokens    int `json:"used_tokens" doc:"estimated tokens of the transcript plus the frozen tool schemas sent with every request, scaled up when the server counted more prompt tokens than estimated for the session's last request"`
	ContextTokens int `json:"context_tokens" doc:"the model's context window"`
}

// Usage reports one provider response's token accounting.
type Usage struct {
	PromptTokens     int  `json:"prompt_tokens" doc:"prompt tokens the provider counted"`
	CompletionTokens int  `json:"completion_tokens" doc:"completion tokens the provider counted"`
	CachedTokens     *int `json:"cached_tokens" doc:"prompt tokens served from the provider's cache, or null when it did not say"`
}

// ToolStart announces a tool call about to run.
type ToolStart struct {
	CallID string          `json:"call_id" nonempty:"true" doc:"the model's id for the call"`
	Name   string          `json:"name" doc:"the tool's name"`
	Args   json.RawMessage `json:"args" doc:"the call's arguments object"`
}

// ToolEnd reports a tool call's result.
type ToolEnd struct {
	CallID string `json:"call_id" nonempty:"true" doc:"the call this result answers"`
	OK     bool   `json:"ok" doc:"false when the call failed, was refused or was cancelled"`
	Output string `json:"output" doc:"what the tool returned to the model"`
}

// HarnessNote is a note the harness wrote into the model's transcript.
type HarnessNote struct {
	CallID string `json:"call_id" doc:"the tool call whose result carried the note; empty for a note inserted before the next prompt"`
	Text   string `json:"text" doc:"the note as the model sees it"`
}

// Retry announces that the model request is being resent.
type Retry struct {
	Attempt     int    `json:"attempt" doc:"the attempt about to go out, counting the first as 1"`
	MaxAttempts int    `json:"max_attempts" doc:"the attempt budget of the request"`
	Reason      string `json:"reason" doc:"what ended the previous attempt"`
}

// Diff reports a file change made by a tool call.
type Diff struct {
	CallID  string `json:"call_id" nonempty:"true" doc:"the tool call that changed the file"`
	Path    string `json:"path" doc:"the file, relative to the project where possible"`
	Diff    string `json:"diff" doc:"a unified diff of the change"`
	Added   int    `json:"added" doc:"lines added"`
	Removed int    `json:"removed" doc:"lines removed"`
}

// ApprovalRequest asks the client to approve a tool call.
type ApprovalRequest struct {
	ApprovalID string   `json:"approval_id" nonempty:"true" doc:"the id an approve command must name"`
	Name       string   `json:"name" doc:"the tool asking"`
	Summary    string   `json:"summary" doc:"one line saying what the call will do"`
	Detail     string   `json:"detail" doc:"the full detail of the call"`
	Reason     string   `json:"reason" enum:"gate,unapproved_source" doc:"gate, or unapproved_source: an external tool whose exact bytes no human approved, which unattended clients must never auto-approve"`
	SourcePath string   `json:"source_path" doc:"for unapproved_source, the tool's source file (project-relative where possible); empty for gate"`
	SourceSHA  string   `json:"source_sha" doc:"for unapproved_source, the first 12 hex digits of the source file's sha256; empty for gate"`
	Env        []string `json:"env,omitempty" doc:"names of the environment variables the approved tool will receive (a credential grant); omitted when empty; show it on its own, unclipped line"`
}

// ApprovalSettled reports how an approval ended.
type ApprovalSettled struct {
	ApprovalID string `json:"approval_id" nonempty:"true" doc:"the approval that settled"`
	Outcome    string `json:"outcome" enum:"approved,declined,timed_out,cancelled" doc:"how it settled"`
}

// Refrozen is the receipt of a reload.
type Refrozen struct {
	Tools   []string `json:"tools" doc:"names of the tools now frozen for the session"`
	Skills  []string `json:"skills" doc:"names of the skills now frozen for the session"`
	Changes []string `json:"changes" doc:"one line per change: what was added, removed or changed, and by which config source"`
}

// SchemasOverBudget warns that tool schemas take most of the window.
type SchemasOverBudget struct {
	SchemaTokens int `json:"schema_tokens" doc:"tokens the installed tool schemas cost on every request"`
	BudgetTokens int `json:"budget_tokens" doc:"tokens the window can spend; compaction stops once schema_tokens reaches it"`
}

// Compacted is the receipt of a forced compaction.
type Compacted struct {
	TokensBefore      int `json:"tokens_before" doc:"estimated transcript tokens before"`
	TokensAfter       int `json:"tokens_after" doc:"estimated transcript tokens after"`
	CompactedMessages int `json:"compacted_messages" doc:"messages folded away; 0 when the transcript was already under the target"`
}

// HookFailed reports a hook that did not run.
type HookFailed struct {
	Hook   string `json:"hook" doc:"the hook's name or file"`
	Event  string `json:"event" doc:"the hook event it was meant to handle"`
	Detail string `json:"detail" doc:"why it did not run"`
}

// TurnRefused reports a blocking turn_end hook refusing the completion.
type TurnRefused struct {
	Hook              string `json:"hook" doc:"the refusing hook"`
	Reason            string `json:"reason" doc:"the refusal, already in the transcript as a user message"`
	Continuation      int    `json:"continuation" doc:"refusals honored before this one"`
	ContinuationsLeft int    `json:"continuations_left" doc:"refusals the harness had left to honor"`
}

// Done terminates a user command.
type Done struct {
	StopReason string `json:"stop_reason" nonempty:"true" doc:"why the turn ended; see the stop_reason table"`
}

// Error reports a failure inside a turn.
type Error struct {
	Message string `json:"message" doc:"what failed"`
}

func (Token) EventType() string             { return "token" }
func (Thinking) EventType() string          { return "thinking" }
func (MessageDone) EventType() string       { return "message_done" }
func (Budget) EventType() string            { return "budget" }
func (Usage) EventType() string             { return "usage" }
func (ToolStart) EventType() string         { return "tool_start" }
func (ToolEnd) EventType() string           { return "tool_end" }
func (HarnessNote) EventType() string       { return "harness_note" }
func (Retry) EventType() string             { return "retry" }
func (Diff) EventType() string              { return "diff" }
func (ApprovalRequest) EventType() string   { return "approval_request" }
func (ApprovalSettled) EventType() string   { return "approval_settled" }
func (Refrozen) EventType() string          { return "refrozen" }
func (SchemasOverBudget) EventType() string { return "schemas_over_budget" }
func (Compacted) EventType() string         { return "compacted" }
func (HookFailed) EventType() string        { return "hook_failed" }
func (TurnRefused) EventType() string       { return "turn_refused" }
func (Done) EventType() string              { return "done" }
func (Error) EventType() string             { return "error" }

// ---- Other stdout lines (type first, then the fields in order) ----

// Line is a stdout line that is not an event: its struct fields follow type
// in declaration order, session_id included where the line carries one.
type Line interface{ LineType() string }

// Hello is the first stdout line.
type Hello struct {
	Proto           string `json:"proto" const:"\"openmax-stdio/6\"" doc:"the protocol id; its major matches protocol_version"`
	ProtocolVersion int    `json:"protocol_version" const:"6" doc:"the protocol's integer version; compare it directly"`
	SessionID       string `json:"session_id" nonempty:"true" doc:"the session every event belongs to"`
	Version         string `json:"version" doc:"the openmax build"`
	Project         string `json:"project" doc:"the project directory, absolute"`
	Continued       bool   `json:"continued" doc:"true when --continue resumed a prior session; a transcript line follows"`
}

// Transcript carries a continued session's history, right after hello.
type Transcript struct {
	SessionID string              `json:"session_id" nonempty:"true" doc:"the session"`
	Messages  []TranscriptMessage `json:"messages" doc:"user and assistant text only, each capped at 4096 characters"`
	Truncated bool                `json:"truncated" doc:"whether any message or the line (256 KiB of content) was cut"`
}

// TranscriptMessage is one message of a Transcript.
type TranscriptMessage struct {
	Role    string `json:"role" enum:"user,assistant" doc:"who wrote it"`
	Content string `json:"content" doc:"its text"`
}

// ProtocolError reports bad input or a command that cannot be honored. It
// carries no session_id.
type ProtocolError struct {
	Message string `json:"message" doc:"what was wrong, naming the problem"`
}

// ApprovalModeAck acknowledges a persisted approval_mode. It carries no
// session_id.
type ApprovalModeAck struct {
	Mode string `json:"mode" enum:"auto,ask,readonly" doc:"the mode now saved"`
}

func (Hello) LineType() string           { return "hello" }
func (Transcript) LineType() string      { return "transcript" }
func (ProtocolError) LineType() string   { return "protocol_error" }
func (ApprovalModeAck) LineType() string { return "approval_mode" }

// ---- Commands (stdin, discriminated by cmd) ----

// Command is one decoded stdin command.
type Command interface{ CommandName() string }

// User starts a turn.
type User struct {
	Text string `json:"text" doc:"the prompt; empty text starts no turn (protocol_error, then done refused)"`
}

// Approve answers a pending approval.
type Approve struct {
	ApprovalID string `json:"approval_id" doc:"the id from approval_request"`
	Approved   bool   `json:"approved" doc:"true to allow the call"`
}

// ApprovalMode saves the execution mode for the trusted project.
type ApprovalMode struct {
	Mode string `json:"mode" enum:"auto,ask,readonly" doc:"auto (no approval requests), ask (mutating calls wait for approve) or readonly (mutating calls refused)"`
}

// Reload re-freezes tools, skills and prompt from the current config.
type Reload struct{}

// Cancel cancels the running turn.
type Cancel struct{}

// Quit drains the in-flight turn, then exits.
type Quit struct{}

func (User) CommandName() string         { return "user" }
func (Approve) CommandName() string      { return "approve" }
func (ApprovalMode) CommandName() string { return "approval_mode" }
func (Reload) CommandName() string       { return "reload" }
func (Cancel) CommandName() string       { return "cancel" }
func (Quit) CommandName() string         { return "quit" }

// Stop reasons the harness itself produces; any other non-empty value is a
// provider finish reason passed through verbatim.
const (
	StopTruncated       = "truncated"
	StopMaxIterations   = "max_iterations"
	StopBudgetExhausted = "budget_exhausted"
	StopUnverified      = "unverified"
	StopBlocked         = "blocked"
	StopCancelled       = "cancelled"
	StopError           = "error"
	StopRefused         = "refused"
)
