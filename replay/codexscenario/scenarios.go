package codexscenario

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/openmax/openmax/provider/codex"
)

// ClientName is the clientInfo.name the drivers' clients send.
const ClientName = "openmax-e2e"

// SwitchedModel is the model the model_switch scenario switches to: a
// name codex has no metadata for, like the configured gpt-5-codex, so its
// tool surface stays the same.
const SwitchedModel = "gpt-5.1-codex-other"

// MCPServer and PluginServer are the names the mcp_tool and plugin_tool
// scenarios give the stub MCP server: in config.toml, and in the plugin's
// .mcp.json.
const (
	MCPServer    = "probe"
	PluginServer = "plugin_probe"
)

// NotesFile and NotesText are the file the dynamic tool scenario reads.
const (
	NotesFile = "notes.txt"
	NotesText = "hi from notes\n"
)

// All returns the scenarios, in a fixed order.
func All() []Scenario {
	return []Scenario{
		{Name: "text", Doc: "initialize, a thread, a turn streaming text", Clients: 1, Run: runText,
			Model: `replies:
  - chunks: [{text: "Hello"}, {text: " from"}, {text: " the fake."}, {usage: {prompt_tokens: 20, completion_tokens: 5}}, {finish: stop}]
`},
		{Name: "tool", Doc: "the model calls the dynamic tool openmax.read_file twice (a file of the session, then a missing one); the handler answers", Clients: 1, Run: runTool,
			Model: `replies:
  - tool_calls: [{id: call_read1, name: read_file, namespace: openmax, args: {path: notes.txt}}]
  - tool_calls: [{id: call_read2, name: read_file, namespace: openmax, args: {path: missing.txt}}]
  - chunks: [{text: "The notes say hi;"}, {text: " missing.txt is not there."}, {finish: stop}]
`},
		{Name: "steer", Doc: "turn/steer while the model streams: codex drops that response and asks again with the steer", Clients: 1, Run: runSteer,
			Model: `replies:
  - chunks: [{text: "Working"}, {stall: true}]
  - chunks: [{text: "Steered: "}, {text: "using the hint."}, {finish: stop}]
`},
		{Name: "interrupt", Doc: "turn/interrupt while the model streams, then a turn on the same thread", Clients: 1, Run: runInterrupt,
			Model: `replies:
  - chunks: [{text: "Streaming"}, {text: " and then"}, {stall: true}]
  - chunks: [{text: "Still usable."}, {finish: stop}]
`},
		{Name: "compact", Doc: "a turn, thread/compact/start (a turn of its own with a contextCompaction item), a turn after it", Clients: 1, Run: runCompact,
			Model: `replies:
  - text: "First answer."
  - text: "Summary: the user said hello."
  - text: "After compaction."
`},
		{Name: "resume_fork", Doc: "two turns; a second client process on the same CODEX_HOME resumes the thread, runs a turn, forks it at the first turn and runs a turn on the fork", Clients: 2, Run: runResumeFork,
			Model: `replies:
  - text: "First answer."
  - text: "Second answer."
  - text: "Resumed answer."
  - text: "Forked answer."
`},
		{Name: "model_switch", Doc: "a turn/start with another model, read back with thread/read; the next turn keeps it", Clients: 1, Run: runModelSwitch,
			Model: `replies:
  - text: "Default model answer."
  - text: "Switched model answer."
  - text: "Still switched."
`},
		{Name: "retry429", Doc: "a 429 with Retry-After: 0, then the answer: error willRetry then a completed turn", Clients: 1, Run: runRetry,
			Model: `replies:
  - status: 429
    headers: {Retry-After: "0"}
  - chunks: [{text: "Recovered"}, {text: " answer."}, {finish: stop}]
`},
		{Name: "command_env", Doc: "the model runs a shell command through codex: it sees the client's commit identity (GIT_AUTHOR_*/GIT_COMMITTER_*) and extra environment, and its output streams as outputDelta before the item completes", Clients: 1, Run: runCommandEnv,
			Model: `replies:
  - tool_calls: [{id: call_env1, name: exec_command, args: {cmd: "printf '%s <%s> %s\\n' \"$GIT_AUTHOR_NAME\" \"$GIT_COMMITTER_EMAIL\" \"$OPENMAX_SCENARIO\"; for i in 1 2 3; do sleep 0.3; echo line$i; done", yield_time_ms: 10000}}]
  - chunks: [{text: "Ran it."}, {finish: stop}]
`},
		{Name: "interrupt_command", Doc: "turn/interrupt while a shell command runs (sleep 30): the turn ends interrupted at once, the command item never completes, and the thread stays usable", Clients: 1, Run: runInterruptCommand,
			Model: `replies:
  - tool_calls: [{id: call_sleep1, name: exec_command, args: {cmd: "sleep 30", yield_time_ms: 60000}}]
  - chunks: [{text: "Stopped waiting."}, {finish: stop}]
`},
		{Name: "resume_tool", Doc: "a thread started with the openmax tools is resumed by a second app-server process, which sends no tools: the resumed thread still has them, and the model's call reaches the second client's handler", Clients: 2, Run: runResumeTool,
			Model: `replies:
  - text: "First answer."
  - tool_calls: [{id: call_read_resumed, name: read_file, namespace: openmax, args: {path: notes.txt}}]
  - chunks: [{text: "Read it after the resume."}, {finish: stop}]
`},
		{Name: "fork_tool", Doc: "a thread started with the openmax tools is forked at its first turn, by the same app-server process and then by a second one; neither fork sends tools, and in each the model's openmax.read_file call reaches the client's handler", Clients: 2, Run: runForkTool,
			Model: `replies:
  - text: "First answer."
  - tool_calls: [{id: call_read_fork1, name: read_file, namespace: openmax, args: {path: notes.txt}}]
  - chunks: [{text: "Read it in the fork."}, {finish: stop}]
  - tool_calls: [{id: call_read_fork2, name: read_file, namespace: openmax, args: {path: notes.txt}}]
  - chunks: [{text: "Read it in the second fork."}, {finish: stop}]
`},
		{Name: "mcp_tool", Doc: "an MCP server configured in the client's CODEX_HOME/config.toml: the model calls its tool, codex runs it on the server, and the client sees the mcpToolCall item with the server's answer", Clients: 1, Run: runMCPTool,
			Home: Home{MCPServer: MCPServer},
			Model: `replies:
  - tool_calls: [{id: call_ping1, name: ping, namespace: mcp__probe, args: {text: from config.toml}}]
  - chunks: [{text: "The MCP server answered."}, {finish: stop}]
`},
		{Name: "plugin_tool", Doc: "a plugin installed into the client's CODEX_HOME from a local marketplace, bundling an MCP server: the model calls the plugin's tool, codex runs it, and the client sees the mcpToolCall item with the server's answer", Clients: 1, Run: runMCPTool,
			Home: Home{PluginServer: PluginServer},
			Model: `replies:
  - tool_calls: [{id: call_ping1, name: ping, namespace: mcp__plugin_probe, args: {text: from the plugin}}]
  - chunks: [{text: "The plugin's MCP server answered."}, {finish: stop}]
`},
		{Name: "reasoning", Doc: "the model reasons before answering: a reasoning item whose summary streams as item/reasoning/summaryTextDelta, then the agent message", Clients: 1, Run: runText,
			Model: `replies:
  - chunks: [{thinking: "Weighing"}, {thinking: " the options."}, {text: "Decided."}, {finish: stop}]
`},
		{Name: "truncated", Doc: "a stream ending before response.completed, then the answer: error willRetry then a completed turn", Clients: 1, Run: runRetry,
			Model: `replies:
  - chunks: [{text: "partial"}, {text: " text"}, {died: "cut"}]
  - chunks: [{text: "Recovered"}, {text: " answer."}, {finish: stop}]
`},
	}
}

// session is one driver's run: its harness, log and clients.
type session struct {
	h   Harness
	log *log
	n   int // clients started
}

func newSession(h Harness) *session { return &session{h: h, log: newLog()} }

// client starts the next client with the scenario's tools.
func (s *session) client(ctx context.Context) (*codex.Client, *watcher, error) {
	return s.clientWith(ctx, codex.Options{})
}

// clientWith starts the next client with o, the scenario's tools and
// client info added.
func (s *session) clientWith(ctx context.Context, o codex.Options) (*codex.Client, *watcher, error) {
	s.n++
	o.ClientName, o.ClientVersion, o.Tools = ClientName, "0", s.tools()
	cl, err := s.h.Start(ctx, o)
	if err != nil {
		return nil, nil, fmt.Errorf("client %d: %w", s.n, err)
	}
	ua, _, _ := strings.Cut(cl.Init.UserAgent, " ")
	s.log.add("client %d: initialize -> userAgent %s", s.n, ua)
	return cl, newWatcher(cl, s.log), nil
}

// tools is the openmax namespace: read_file over the session's folder.
func (s *session) tools() []codex.Namespace {
	dir := s.h.Dir()
	return []codex.Namespace{{
		Name:        "openmax",
		Description: "Tools of the openmax session.",
		Tools: []codex.Tool{{
			Name:        "read_file",
			Description: "Read a file of the session's folder.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`),
			Handler: func(_ context.Context, call codex.ToolCall) (string, error) {
				var args struct {
					Path string `json:"path"`
				}
				if err := json.Unmarshal(call.Arguments, &args); err != nil {
					s.log.tool("read_file %s: bad arguments", call.Arguments)
					return "", fmt.Errorf("read_file: arguments: %w", err)
				}
				if !filepath.IsLocal(args.Path) {
					s.log.tool("read_file %q: refused", args.Path)
					return "", fmt.Errorf("read_file: %q is not a path inside the session's folder", args.Path)
				}
				b, err := os.ReadFile(filepath.Join(dir, args.Path))
				if err != nil {
					// The error names the file as the model gave it: an
					// absolute path would differ between runs.
					s.log.tool("read_file %q (call %s): not found", args.Path, call.CallID)
					return "", fmt.Errorf("no such file: %s", args.Path)
				}
				s.log.tool("read_file %q (call %s): %d bytes", args.Path, call.CallID, len(b))
				return string(b), nil
			},
		}},
	}}
}

// open starts the next client with o and a thread on it.
func (s *session) open(ctx context.Context, o codex.Options) (*codex.Client, *watcher, *codex.Session, error) {
	cl, w, err := s.clientWith(ctx, o)
	if err != nil {
		return nil, nil, nil, err
	}
	th, err := s.thread(ctx, cl)
	return cl, w, th, err
}

// interrupt interrupts th's running turn, waits for its turn/completed
// (the latency is kept under name), and runs one more turn on the thread.
func (s *session) interrupt(ctx context.Context, th *codex.Session, w *watcher, name string) error {
	start := time.Now()
	if err := th.Interrupt(ctx); err != nil {
		return err
	}
	s.log.add("turn/interrupt -> ok")
	done, err := w.turnCompleted(ctx)
	if err != nil {
		return err
	}
	s.log.latency(name, time.Since(start))
	s.log.add("  (status %s; no turn active after it: %v)", done.Status, th.ActiveTurn() == "")
	_, err = s.turn(ctx, th, w, "Are you there?")
	return err
}

// threadOptions are every thread's settings.
func (s *session) threadOptions() codex.ThreadOptions {
	return codex.ThreadOptions{Cwd: s.h.Dir(), DeveloperInstructions: "You are driven by openmax's end-to-end tests."}
}

// thread starts a thread.
func (s *session) thread(ctx context.Context, cl *codex.Client) (*codex.Session, error) {
	th, err := cl.StartThread(ctx, s.threadOptions())
	if err != nil {
		return nil, err
	}
	s.log.add("thread/start -> %s", threadSummary(th.Thread))
	return th, nil
}

func threadSummary(t codex.Thread) string {
	return fmt.Sprintf("provider=%s cliVersion=%s status=%s turns=%d preview=%q", t.ModelProvider, t.CliVersion, t.Status.Type, len(t.Turns), t.Preview)
}

// send starts a turn.
func (s *session) send(ctx context.Context, th *codex.Session, text string) (codex.Turn, error) {
	turn, err := th.Send(ctx, text)
	if err != nil {
		return turn, err
	}
	s.log.add("turn/start %q -> status=%s", text, turn.Status)
	return turn, nil
}

// turn starts a turn and waits for its turn/completed.
func (s *session) turn(ctx context.Context, th *codex.Session, w *watcher, text string) (codex.Turn, error) {
	turn, err := s.send(ctx, th, text)
	if err != nil {
		return turn, err
	}
	done, err := w.turnCompleted(ctx)
	if err != nil {
		return turn, err
	}
	if done.ID != turn.ID {
		s.log.add("  (turn/completed is of another turn than turn/start answered)")
	}
	return turn, nil
}

// closeClient ends a client's app-server.
func (s *session) closeClient(ctx context.Context, cl *codex.Client) error {
	if err := cl.Close(ctx); err != nil {
		return fmt.Errorf("close client %d: %w", s.n, err)
	}
	s.log.add("client %d: closed", s.n)
	return nil
}

func runText(ctx context.Context, h Harness) (Outcome, error) {
	s := newSession(h)
	cl, w, th, err := s.open(ctx, codex.Options{})
	if err != nil {
		return s.log.outcome(), err
	}
	if _, err := s.turn(ctx, th, w, "Say hello."); err != nil {
		return s.log.outcome(), err
	}
	return s.log.outcome(), s.closeClient(ctx, cl)
}

func runTool(ctx context.Context, h Harness) (Outcome, error) {
	s := newSession(h)
	if err := os.WriteFile(filepath.Join(h.Dir(), NotesFile), []byte(NotesText), 0o644); err != nil {
		return s.log.outcome(), err
	}
	cl, w, th, err := s.open(ctx, codex.Options{})
	if err != nil {
		return s.log.outcome(), err
	}
	if _, err := s.turn(ctx, th, w, "Read notes.txt and missing.txt."); err != nil {
		return s.log.outcome(), err
	}
	return s.log.outcome(), s.closeClient(ctx, cl)
}

func runSteer(ctx context.Context, h Harness) (Outcome, error) {
	s := newSession(h)
	cl, w, th, err := s.open(ctx, codex.Options{})
	if err != nil {
		return s.log.outcome(), err
	}
	turn, err := s.send(ctx, th, "Start working.")
	if err != nil {
		return s.log.outcome(), err
	}
	// The model has streamed its first words and stalls: steer now.
	if err := w.delta(ctx, "Working"); err != nil {
		return s.log.outcome(), err
	}
	active := th.ActiveTurn()
	if err := th.Steer(ctx, "Also mention the hint."); err != nil {
		return s.log.outcome(), err
	}
	s.log.add("turn/steer %q (expectedTurnId = the turn turn/start answered: %v) -> ok", "Also mention the hint.", active == turn.ID)
	done, err := w.turnCompleted(ctx)
	if err != nil {
		return s.log.outcome(), err
	}
	s.log.add("  (one turn: turn/completed is the steered turn: %v; no turn active after it: %v)", done.ID == turn.ID, th.ActiveTurn() == "")
	return s.log.outcome(), s.closeClient(ctx, cl)
}

func runInterrupt(ctx context.Context, h Harness) (Outcome, error) {
	s := newSession(h)
	cl, w, th, err := s.open(ctx, codex.Options{})
	if err != nil {
		return s.log.outcome(), err
	}
	if _, err := s.send(ctx, th, "Stream something."); err != nil {
		return s.log.outcome(), err
	}
	// The stream stalls after " and then": interrupt it.
	if err := w.delta(ctx, " and then"); err != nil {
		return s.log.outcome(), err
	}
	if err := s.interrupt(ctx, th, w, "interrupt"); err != nil {
		return s.log.outcome(), err
	}
	return s.log.outcome(), s.closeClient(ctx, cl)
}

func runCompact(ctx context.Context, h Harness) (Outcome, error) {
	s := newSession(h)
	cl, w, th, err := s.open(ctx, codex.Options{})
	if err != nil {
		return s.log.outcome(), err
	}
	if _, err := s.turn(ctx, th, w, "Hello."); err != nil {
		return s.log.outcome(), err
	}
	if err := th.Compact(ctx); err != nil {
		return s.log.outcome(), err
	}
	s.log.add("thread/compact/start -> ok")
	if _, err := w.turnCompleted(ctx); err != nil {
		return s.log.outcome(), err
	}
	if _, err := s.turn(ctx, th, w, "After compaction?"); err != nil {
		return s.log.outcome(), err
	}
	return s.log.outcome(), s.closeClient(ctx, cl)
}

func runResumeFork(ctx context.Context, h Harness) (Outcome, error) {
	s := newSession(h)
	cl, w, th, err := s.open(ctx, codex.Options{})
	if err != nil {
		return s.log.outcome(), err
	}
	first, err := s.turn(ctx, th, w, "Hello one.")
	if err != nil {
		return s.log.outcome(), err
	}
	if _, err := s.turn(ctx, th, w, "Hello two."); err != nil {
		return s.log.outcome(), err
	}
	if err := s.closeClient(ctx, cl); err != nil {
		return s.log.outcome(), err
	}

	// A second app-server process on the same CODEX_HOME.
	cl2, w2, err := s.client(ctx)
	if err != nil {
		return s.log.outcome(), err
	}
	resumed, err := cl2.ResumeThread(ctx, th.ID, s.threadOptions())
	if err != nil {
		return s.log.outcome(), err
	}
	s.log.add("thread/resume -> same thread: %v; %s", resumed.ID == th.ID, threadSummary(resumed.Thread))
	if _, err := s.turn(ctx, resumed, w2, "Resumed?"); err != nil {
		return s.log.outcome(), err
	}
	fork, err := cl2.ForkThread(ctx, th.ID, first.ID, s.threadOptions())
	if err != nil {
		return s.log.outcome(), err
	}
	s.log.add("thread/fork lastTurnId=<the first turn> -> a new thread: %v; forkedFromId is the resumed thread: %v; %s",
		fork.ID != th.ID, fork.Thread.ForkedFromID == th.ID, threadSummary(fork.Thread))
	if _, err := s.turn(ctx, fork, w2, "Forked?"); err != nil {
		return s.log.outcome(), err
	}
	return s.log.outcome(), s.closeClient(ctx, cl2)
}

func runModelSwitch(ctx context.Context, h Harness) (Outcome, error) {
	s := newSession(h)
	cl, w, th, err := s.open(ctx, codex.Options{})
	if err != nil {
		return s.log.outcome(), err
	}
	read := func() error {
		t, err := th.Read(ctx)
		if err != nil {
			return err
		}
		s.log.add("thread/read -> model=%s", t.Model)
		return nil
	}
	if _, err := s.turn(ctx, th, w, "Hello."); err != nil {
		return s.log.outcome(), err
	}
	if err := read(); err != nil {
		return s.log.outcome(), err
	}
	th.SetModel(SwitchedModel)
	s.log.add("(model %s on the next turn/start)", SwitchedModel)
	if _, err := s.turn(ctx, th, w, "Switch the model."); err != nil {
		return s.log.outcome(), err
	}
	if err := read(); err != nil {
		return s.log.outcome(), err
	}
	th.SetModel("")
	s.log.add("(no model on the next turn/start)")
	if _, err := s.turn(ctx, th, w, "Still switched?"); err != nil {
		return s.log.outcome(), err
	}
	if err := read(); err != nil {
		return s.log.outcome(), err
	}
	return s.log.outcome(), s.closeClient(ctx, cl)
}

// runRetry is one turn whose first model request fails and is retried.
func runRetry(ctx context.Context, h Harness) (Outcome, error) {
	s := newSession(h)
	cl, w, th, err := s.open(ctx, codex.Options{})
	if err != nil {
		return s.log.outcome(), err
	}
	if _, err := s.turn(ctx, th, w, "Answer, please."); err != nil {
		return s.log.outcome(), err
	}
	return s.log.outcome(), s.closeClient(ctx, cl)
}

// ErrNoClient is a harness asked for more clients than it has.
var ErrNoClient = errors.New("codexscenario: the scenario starts more clients than the harness has")

// Identity is the commit identity the command_env scenario's client sets.
var Identity = codex.Identity{Name: "Ada Bot", Email: "ada@example.com"}

func runCommandEnv(ctx context.Context, h Harness) (Outcome, error) {
	s := newSession(h)
	cl, w, th, err := s.open(ctx, codex.Options{Identity: Identity, Env: []string{"OPENMAX_SCENARIO=command_env"}})
	if err != nil {
		return s.log.outcome(), err
	}
	if _, err := s.turn(ctx, th, w, "Show the identity."); err != nil {
		return s.log.outcome(), err
	}
	return s.log.outcome(), s.closeClient(ctx, cl)
}

func runInterruptCommand(ctx context.Context, h Harness) (Outcome, error) {
	s := newSession(h)
	cl, w, th, err := s.open(ctx, codex.Options{})
	if err != nil {
		return s.log.outcome(), err
	}
	if _, err := s.send(ctx, th, "Wait a while."); err != nil {
		return s.log.outcome(), err
	}
	// The command has started (and runs for 30 s): interrupt it.
	if err := w.until(ctx, "the command's item/started", func(ev codex.Event) bool {
		var p codex.ItemStartedNotification
		return ev.Method == codex.MethodItemStarted && json.Unmarshal(ev.Params, &p) == nil && p.Item.Type == codex.ThreadItemTypeCommandExecution
	}); err != nil {
		return s.log.outcome(), err
	}
	if err := s.interrupt(ctx, th, w, "interrupt_command"); err != nil {
		return s.log.outcome(), err
	}
	return s.log.outcome(), s.closeClient(ctx, cl)
}

func runResumeTool(ctx context.Context, h Harness) (Outcome, error) {
	s := newSession(h)
	if err := os.WriteFile(filepath.Join(h.Dir(), NotesFile), []byte(NotesText), 0o644); err != nil {
		return s.log.outcome(), err
	}
	cl, w, th, err := s.open(ctx, codex.Options{})
	if err != nil {
		return s.log.outcome(), err
	}
	if _, err := s.turn(ctx, th, w, "Hello."); err != nil {
		return s.log.outcome(), err
	}
	if err := s.closeClient(ctx, cl); err != nil {
		return s.log.outcome(), err
	}
	cl2, w2, err := s.client(ctx)
	if err != nil {
		return s.log.outcome(), err
	}
	resumed, err := cl2.ResumeThread(ctx, th.ID, s.threadOptions())
	if err != nil {
		return s.log.outcome(), err
	}
	s.log.add("thread/resume (no dynamicTools sent) -> same thread: %v", resumed.ID == th.ID)
	if _, err := s.turn(ctx, resumed, w2, "Read notes.txt again."); err != nil {
		return s.log.outcome(), err
	}
	return s.log.outcome(), s.closeClient(ctx, cl2)
}

// runForkTool forks a thread started with the tools at its first turn,
// in the same process and in a second one; in each fork the model calls
// openmax.read_file.
func runForkTool(ctx context.Context, h Harness) (Outcome, error) {
	s := newSession(h)
	if err := os.WriteFile(filepath.Join(h.Dir(), NotesFile), []byte(NotesText), 0o644); err != nil {
		return s.log.outcome(), err
	}
	cl, w, th, err := s.open(ctx, codex.Options{})
	if err != nil {
		return s.log.outcome(), err
	}
	first, err := s.turn(ctx, th, w, "Hello.")
	if err != nil {
		return s.log.outcome(), err
	}
	fork, err := cl.ForkThread(ctx, th.ID, first.ID, s.threadOptions())
	if err != nil {
		return s.log.outcome(), err
	}
	s.log.add("thread/fork lastTurnId=<the first turn> (no dynamicTools sent) -> a new thread: %v; forkedFromId is the source: %v",
		fork.ID != th.ID, fork.Thread.ForkedFromID == th.ID)
	if _, err := s.turn(ctx, fork, w, "Read notes.txt in the fork."); err != nil {
		return s.log.outcome(), err
	}
	if err := s.closeClient(ctx, cl); err != nil {
		return s.log.outcome(), err
	}

	// A second app-server process, which has the source thread only from
	// CODEX_HOME.
	cl2, w2, err := s.client(ctx)
	if err != nil {
		return s.log.outcome(), err
	}
	fork2, err := cl2.ForkThread(ctx, th.ID, first.ID, s.threadOptions())
	if err != nil {
		return s.log.outcome(), err
	}
	s.log.add("thread/fork lastTurnId=<the first turn> (no dynamicTools sent) -> a new thread: %v; not the first fork: %v; forkedFromId is the source: %v",
		fork2.ID != th.ID, fork2.ID != fork.ID, fork2.Thread.ForkedFromID == th.ID)
	if _, err := s.turn(ctx, fork2, w2, "Read notes.txt in the second fork."); err != nil {
		return s.log.outcome(), err
	}
	return s.log.outcome(), s.closeClient(ctx, cl2)
}

// runMCPTool is one turn in which the model calls a tool of an MCP server
// the scenario's Home configures.
func runMCPTool(ctx context.Context, h Harness) (Outcome, error) {
	s := newSession(h)
	cl, w, th, err := s.open(ctx, codex.Options{})
	if err != nil {
		return s.log.outcome(), err
	}
	if _, err := s.turn(ctx, th, w, "Ping the MCP server."); err != nil {
		return s.log.outcome(), err
	}
	return s.log.outcome(), s.closeClient(ctx, cl)
}
