package wire

import (
	"fmt"
	"reflect"
)

// Role says where a definition sits in the protocol.
type Role int

// Definition roles.
const (
	RoleEvent   Role = iota // stdout, session_id then type then fields
	RoleLine                // stdout, type then fields
	RoleCommand             // stdin, discriminated by cmd
)

// Def is the single definition of one command, event or line: its name,
// its prose, and (through Proto's struct type) its fields. The emitter, the
// command decoder, the validator and --spec are all derived from Defs.
type Def struct {
	Name      string
	Role      Role
	Doc       string
	SessionID bool // the line carries session_id
	Proto     any  // a zero value of the Go type
	Fields    []Field
}

// Commands, Events and Lines list every definition in the order --spec prints
// them.
var (
	Commands = []*Def{
		{Name: "user", Role: RoleCommand, Proto: User{}, Doc: "Start a turn with the text. Answered by exactly one done, unless a turn is already in flight: then a protocol_error alone."},
		{Name: "approve", Role: RoleCommand, Proto: Approve{}, Doc: "Answer a pending approval_request. An id never issued or already settled gets a protocol_error."},
		{Name: "approval_mode", Role: RoleCommand, Proto: ApprovalMode{}, Doc: "Save the execution mode for this trusted project. Answered by an approval_mode line once persisted, or a protocol_error naming the legal values; on a save failure the mode is unchanged and the error says so."},
		{Name: "reload", Role: RoleCommand, Proto: Reload{}, Doc: "Re-freeze tools, skills and prompt from the current config. Answered by refrozen, or a protocol_error while a turn is in flight."},
		{Name: "cancel", Role: RoleCommand, Proto: Cancel{}, Doc: "Cancel the running turn; it ends with done cancelled."},
		{Name: "quit", Role: RoleCommand, Proto: Quit{}, Doc: "Drain the in-flight turn, then exit. EOF on stdin means the same."},
	}

	Events = []*Def{
		{Name: "token", Proto: Token{}, Doc: "A piece of reply text. A run of tokens ends in message_done, or in error when the stream failed."},
		{Name: "thinking", Proto: Thinking{}, Doc: "A piece of model reasoning. Void if a retry follows: the reply starts over."},
		{Name: "message_done", Proto: MessageDone{}, Doc: "Closes a run of tokens with its whole text."},
		{Name: "budget", Proto: Budget{}, Doc: "How full the context window is. openmax sends exactly one, as the first line of every admitted turn."},
		{Name: "usage", Proto: Usage{}, Doc: "Token accounting of one provider response."},
		{Name: "tool_start", Proto: ToolStart{}, Doc: "A tool call of a completed reply is about to run."},
		{Name: "tool_end", Proto: ToolEnd{}, Doc: "The result of a tool call; every tool_start gets one before done."},
		{Name: "harness_note", Proto: HarnessNote{}, Doc: "A note the harness wrote into the model's transcript: a refreeze receipt, or a policy, provider, settings or approval notice."},
		{Name: "retry", Proto: Retry{}, Doc: "The model request is being resent after a transport failure, a 429 or a transient server error (500, 502, 503, 504, 529), or, before any reply text, a stream that died or a provider-reported rate limit, overload or server fault. Sent before the backoff wait, which is the backoff or the server's Retry-After when longer; a Retry-After over a minute and an exhausted quota are not retried. A cancel during the wait ends the turn and the attempt never goes out. No token precedes a retried stream, and thinking already sent for the voided attempt is void. Three attempts in a row that never reached the endpoint give up early."},
		{Name: "diff", Proto: Diff{}, Doc: "A file change made by a tool call."},
		{Name: "approval_request", Proto: ApprovalRequest{}, Doc: "A tool call waits for an approve. Pending until answered or cancelled, even if the mode then changes; after quit or EOF, pending and later requests are declined."},
		{Name: "approval_settled", Proto: ApprovalSettled{}, Doc: "How an approval ended."},
		{Name: "refrozen", Proto: Refrozen{}, Doc: "The receipt of a reload: what is frozen now and what changed."},
		{Name: "schemas_over_budget", Proto: SchemasOverBudget{}, Doc: "Advisory, at most once per session: the tool schemas take most of what the window can spend, so compaction runs early, and stops once schema_tokens reaches budget_tokens. The turn still runs."},
		{Name: "compacted", Proto: Compacted{}, Doc: "The receipt of a forced compaction."},
		{Name: "hook_failed", Proto: HookFailed{}, Doc: "A hook did not run (an observe-only hook failed, or a hook file is not loaded); the turn went on."},
		{Name: "turn_refused", Proto: TurnRefused{}, Doc: "A blocking turn_end hook refused the completion and the turn continues after its message_done with no client command; reason is already in the transcript as a user message."},
		{Name: "done", Proto: Done{}, Doc: "Terminates a user command; the only guaranteed terminator. For an admitted turn it goes out after the turn's running state and cancellation are released, so the next user may follow at once."},
		{Name: "error", Proto: Error{}, Doc: "A failure inside a turn; done (error or truncated) follows."},
	}

	Lines = []*Def{
		{Name: "hello", Proto: Hello{}, SessionID: true, Doc: "The first stdout line: the protocol identity and the session."},
		{Name: "transcript", Proto: Transcript{}, SessionID: true, Doc: "Only right after a hello with continued true: the resumed session's user and assistant text, so a client can render history. No live events are replayed."},
		{Name: "protocol_error", Proto: ProtocolError{}, Doc: "Bad input or a command that cannot be honored. No session_id. The bad line is skipped and the session is unharmed."},
		{Name: "approval_mode", Proto: ApprovalModeAck{}, Doc: "Acknowledges an approval_mode command after the mode is persisted. No session_id."},
	}
)

// StopReasons is the stop_reason table: the harness's own reasons and what
// they mean. Any other value is a provider finish reason.
var StopReasons = []struct{ Name, Doc string }{
	{"<provider finish reason>", "Passed through verbatim on a normal end (commonly stop or length). A client treats any value it does not know as a normal end."},
	{StopTruncated, "The stream ended with no completion signal (after reply text, or on the last retry) or exceeded a client limit. The reply is incomplete, its tool calls were not run, and an error line precedes done."},
	{StopMaxIterations, "The turn reached the tool-call ceiling."},
	{StopBudgetExhausted, "The per-turn max_agent_tokens cap refused the next request before it was sent; resubmitting continues the work."},
	{StopUnverified, "A blocking turn_end hook refused the completion more often than the harness honors (8), or its refusal could not be persisted."},
	{StopBlocked, "A user_prompt_submit hook refused the prompt."},
	{StopCancelled, "A cancel command or shutdown stopped the turn."},
	{StopError, "The turn failed; an error line precedes done."},
	{StopRefused, "The command started no turn; a protocol_error precedes done."},
}

var (
	eventByName   = map[string]*Def{}
	lineByName    = map[string]*Def{}
	commandByName = map[string]*Def{}
	defByType     = map[reflect.Type]*Def{}
)

func init() {
	for _, d := range Events {
		d.Role, d.SessionID = RoleEvent, true
		register(d, eventByName, d.Proto.(Event).EventType())
	}
	for _, d := range Lines {
		d.Role = RoleLine
		register(d, lineByName, d.Proto.(Line).LineType())
	}
	for _, d := range Commands {
		register(d, commandByName, d.Proto.(Command).CommandName())
	}
}

func register(d *Def, byName map[string]*Def, name string) {
	if name != d.Name {
		panic(fmt.Sprintf("wire: def %q has a Go type named %q", d.Name, name))
	}
	if _, dup := byName[name]; dup {
		panic("wire: duplicate definition " + name)
	}
	t := reflect.TypeOf(d.Proto)
	d.Fields = fieldsOf(t)
	byName[name] = d
	defByType[t] = d
}

// EventDef returns the definition of an event type.
func EventDef(name string) (*Def, bool) { d, ok := eventByName[name]; return d, ok }

// LineDef returns the definition of a non-event stdout line type.
func LineDef(name string) (*Def, bool) { d, ok := lineByName[name]; return d, ok }

// CommandDef returns the definition of a command.
func CommandDef(name string) (*Def, bool) { d, ok := commandByName[name]; return d, ok }
