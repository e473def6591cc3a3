package codex

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// ThreadOptions are the settings of a thread, sent on thread/start,
// thread/resume and thread/fork alike.
type ThreadOptions struct {
	Cwd   string // the thread's working directory; empty leaves it to the server
	Model string // empty leaves it to the server's configuration
	// ApprovalPolicy and Sandbox default to "never" and
	// "danger-full-access": the client runs the agent unattended.
	ApprovalPolicy string
	Sandbox        string
	// DeveloperInstructions is the client's guidance for the model.
	DeveloperInstructions string
	// Reminder, when set, rides every turn/start as additionalContext
	// {"openmax":{"kind":"application","value":Reminder}}.
	Reminder string
}

// ReminderSource is the additionalContext key a Reminder is sent under.
const ReminderSource = "openmax"

// ErrTurnRunning refuses a fork at a turn that is still running.
var ErrTurnRunning = errors.New("codex: the turn is still running")

// ErrNoActiveTurn refuses a steer or an interrupt with no turn running.
var ErrNoActiveTurn = errors.New("codex: no turn is running")

// Session is one thread of the server. Its methods are safe for
// concurrent use.
type Session struct {
	// ID is the thread id the server chose: kept by thread/resume, new
	// for thread/fork.
	ID string
	// Thread is the thread as the server described it when it was
	// started, resumed or forked.
	Thread Thread

	cl   *Client
	opts ThreadOptions

	mu      sync.Mutex
	model   string      // the model of the next Send, "" for no switch
	policy  *TurnPolicy // sent with every Send once set (SetPolicy)
	prepend []string    // texts before the next Send's text (Prepend)
}

// TurnPolicy is the approval policy and sandbox a turn/start sets for
// that turn and every later one of the thread.
type TurnPolicy struct {
	// ApprovalPolicy is an AskForApproval string: untrusted, on-request
	// or never.
	ApprovalPolicy string
	// Sandbox is a SandboxMode: read-only, workspace-write or
	// danger-full-access.
	Sandbox SandboxMode
}

// sandboxPolicy is the turn/start form of a SandboxMode.
func sandboxPolicy(m SandboxMode) *SandboxPolicy {
	switch m {
	case SandboxModeReadOnly:
		return &SandboxPolicy{Type: SandboxPolicyTypeReadOnly}
	case SandboxModeWorkspaceWrite:
		return &SandboxPolicy{Type: SandboxPolicyTypeWorkspaceWrite}
	case SandboxModeDangerFullAccess:
		return &SandboxPolicy{Type: SandboxPolicyTypeDangerFullAccess}
	}
	return nil
}

// SetPolicy makes every later Send carry p as the turn's approvalPolicy
// and sandboxPolicy, so a policy the client chose after the thread
// started applies from the next turn on.
func (s *Session) SetPolicy(p TurnPolicy) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.policy = &p
}

// Prepend adds texts to the next Send only, each as an input item of its
// own before the images and the text (notes the client must show the
// model with that prompt).
func (s *Session) Prepend(texts ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.prepend = append(s.prepend, texts...)
}

func (o ThreadOptions) policy() (approval, sandbox string) {
	approval, sandbox = o.ApprovalPolicy, o.Sandbox
	if approval == "" {
		approval = "never"
	}
	if sandbox == "" {
		sandbox = string(SandboxModeDangerFullAccess)
	}
	return approval, sandbox
}

// StartThread starts a thread with the client's dynamic tools.
func (cl *Client) StartThread(ctx context.Context, o ThreadOptions) (*Session, error) {
	approval, sandbox := o.policy()
	p := ThreadStartParams{
		Cwd:                   o.Cwd,
		Model:                 o.Model,
		ApprovalPolicy:        quoted(approval),
		Sandbox:               SandboxMode(sandbox),
		DeveloperInstructions: o.DeveloperInstructions,
		DynamicTools:          cl.dynamicTools(),
	}
	var r ThreadStartResponse
	if err := cl.Call(ctx, MethodThreadStart, p, &r); err != nil {
		return nil, err
	}
	return &Session{ID: r.Thread.ID, Thread: r.Thread, cl: cl, opts: o}, nil
}

// ResumeThread resumes a thread by id with the same settings and no
// tools (the thread keeps the ones it was started with). The turns are not
// sent back (excludeTurns): the server deprecates hydrating them whole.
func (cl *Client) ResumeThread(ctx context.Context, threadID string, o ThreadOptions) (*Session, error) {
	approval, sandbox := o.policy()
	p := ThreadResumeParams{
		ThreadID:              threadID,
		ExcludeTurns:          true,
		Cwd:                   o.Cwd,
		Model:                 o.Model,
		ApprovalPolicy:        quoted(approval),
		Sandbox:               SandboxMode(sandbox),
		DeveloperInstructions: o.DeveloperInstructions,
	}
	var r ThreadResumeResponse
	if err := cl.Call(ctx, MethodThreadResume, p, &r); err != nil {
		return nil, err
	}
	return &Session{ID: r.Thread.ID, Thread: r.Thread, cl: cl, opts: o}, nil
}

// ForkThread forks threadID into a new thread that keeps the turns up to
// and including lastTurnID (empty keeps them all). The fork point's turn
// must not be running.
func (cl *Client) ForkThread(ctx context.Context, threadID, lastTurnID string, o ThreadOptions) (*Session, error) {
	if running := cl.activeTurn(threadID); running != "" && (lastTurnID == "" || lastTurnID == running) {
		return nil, fmt.Errorf("codex: fork %s at turn %s: %w", threadID, running, ErrTurnRunning)
	}
	approval, sandbox := o.policy()
	p := ThreadForkParams{
		ThreadID:              threadID,
		LastTurnID:            lastTurnID,
		ExcludeTurns:          true,
		Cwd:                   o.Cwd,
		Model:                 o.Model,
		ApprovalPolicy:        quoted(approval),
		Sandbox:               SandboxMode(sandbox),
		DeveloperInstructions: o.DeveloperInstructions,
	}
	var r ThreadForkResponse
	if err := cl.Call(ctx, MethodThreadFork, p, &r); err != nil {
		return nil, err
	}
	return &Session{ID: r.Thread.ID, Thread: r.Thread, cl: cl, opts: o}, nil
}

func (cl *Client) dynamicTools() []DynamicToolSpec {
	var out []DynamicToolSpec
	for _, ns := range cl.opts.Tools {
		var tools []DynamicToolNamespaceTool
		for _, t := range ns.Tools {
			schema := t.InputSchema
			if len(schema) == 0 {
				schema = []byte(`{"type":"object"}`)
			}
			tools = append(tools, DynamicToolNamespaceTool{Type: DynamicToolNamespaceToolTypeFunction, Name: t.Name, Description: t.Description, InputSchema: schema})
		}
		out = append(out, DynamicToolSpec{Type: DynamicToolSpecTypeNamespace, Name: ns.Name, Description: ns.Description, Tools: tools})
	}
	return out
}

// SetModel switches the model from the next Send on: turn/start carries
// it, and the thread keeps it for every later turn (Read reports it).
func (s *Session) SetModel(model string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.model = model
}

// Send starts a turn with text, the images before it, and the reminder
// as additional context. It returns the new turn; turn/started and the
// turn's events follow on Events.
func (s *Session) Send(ctx context.Context, text string, images ...Image) (Turn, error) {
	s.mu.Lock()
	model, policy, prepend := s.model, s.policy, s.prepend
	s.prepend = nil
	s.mu.Unlock()
	input := make([]UserInput, 0, len(prepend)+len(images)+1)
	for _, t := range prepend {
		input = append(input, UserInput{Type: UserInputTypeText, Text: t})
	}
	for _, im := range images {
		input = append(input, UserInput{Type: UserInputTypeImage, URL: im.url()})
	}
	input = append(input, UserInput{Type: UserInputTypeText, Text: text})
	p := TurnStartParams{ThreadID: s.ID, Input: input, Model: model, AdditionalContext: s.reminder()}
	if policy != nil {
		p.ApprovalPolicy, p.SandboxPolicy = quoted(policy.ApprovalPolicy), sandboxPolicy(policy.Sandbox)
	}
	var r TurnStartResponse
	if err := s.cl.Call(ctx, MethodTurnStart, p, &r); err != nil {
		return Turn{}, err
	}
	s.cl.began(s.ID, r.Turn.ID)
	return r.Turn, nil
}

func (s *Session) reminder() map[string]AdditionalContextEntry {
	if s.opts.Reminder == "" {
		return nil
	}
	return map[string]AdditionalContextEntry{ReminderSource: {Kind: AdditionalContextKindApplication, Value: s.opts.Reminder}}
}

// ActiveTurn is the id of the thread's running turn, "" when none: set by
// Send and turn/started, cleared by turn/completed.
func (s *Session) ActiveTurn() string { return s.cl.activeTurn(s.ID) }

// Steer adds text to the running turn; the model reads it at its next
// step without the turn ending.
func (s *Session) Steer(ctx context.Context, text string) error {
	turn := s.ActiveTurn()
	if turn == "" {
		return fmt.Errorf("codex: steer: %w", ErrNoActiveTurn)
	}
	p := TurnSteerParams{ThreadID: s.ID, ExpectedTurnID: turn, Input: []UserInput{{Type: UserInputTypeText, Text: text}}, AdditionalContext: s.reminder()}
	return s.cl.Call(ctx, MethodTurnSteer, p, nil)
}

// Interrupt ends the running turn: turn/completed with status
// interrupted follows, a running command is killed, and the thread stays
// usable.
func (s *Session) Interrupt(ctx context.Context) error {
	turn := s.ActiveTurn()
	if turn == "" {
		return fmt.Errorf("codex: interrupt: %w", ErrNoActiveTurn)
	}
	return s.cl.Call(ctx, MethodTurnInterrupt, TurnInterruptParams{ThreadID: s.ID, TurnID: turn}, nil)
}

// Compact compacts the thread: the server runs it as a turn of its own
// (turn/started, a contextCompaction item, turn/completed).
func (s *Session) Compact(ctx context.Context) error {
	return s.cl.Call(ctx, MethodThreadCompactStart, ThreadCompactStartParams{ThreadID: s.ID}, nil)
}

// Read returns the thread as the server has it now, its current model
// included.
func (s *Session) Read(ctx context.Context) (Thread, error) {
	var r ThreadReadResponse
	if err := s.cl.Call(ctx, MethodThreadRead, ThreadReadParams{ThreadID: s.ID}, &r); err != nil {
		return Thread{}, err
	}
	return r.Thread, nil
}

// quoted is a string as the JSON of a field the schema types as a mix of
// strings and objects.
func quoted(s string) []byte { return []byte(`"` + s + `"`) }
