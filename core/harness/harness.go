// Package harness assembles openmax. From a typed Config and the Deps a
// caller substitutes (transport, clock, environment, extra tools, seed) it
// builds the provider chain, the tools, the turn engine, the project's
// settings and the saved session, and runs them: over the openmax-stdio/6
// wire (Serve) or for one prompt (Prompt). It is the composition root:
// cmd/openmax only turns flags into a Config, and record, replay and users'
// own programs build the same harness the binary runs.
package harness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/openmax/openmax/core"
	"github.com/openmax/openmax/core/codexbackend"
	"github.com/openmax/openmax/core/hook"
	"github.com/openmax/openmax/core/stdio"
	"github.com/openmax/openmax/core/tool"
	"github.com/openmax/openmax/core/tool/builtin"
	"github.com/openmax/openmax/internal/flock"
	"github.com/openmax/openmax/provider"
	"github.com/openmax/openmax/provider/clock"
	"github.com/openmax/openmax/provider/codex"
)

// Deps are what a caller substitutes for the real world. The zero Deps is
// the real one: the network, the wall clock, the process environment, the
// built-in tools only, diagnostics discarded.
type Deps struct {
	// Transport carries the provider's HTTP requests; nil means the
	// network. A recorder or a replayer goes here.
	Transport http.RoundTripper
	// Clock times every wait (retry backoff, watchdogs, approvals); nil
	// means the wall clock.
	Clock clock.Clock
	// Getenv reads environment variables (API keys, base URLs, the config
	// and state directories); nil means os.Getenv.
	Getenv func(string) string
	// Tools are offered to the model besides (or, with NoBuiltin, instead
	// of) the built-in tools.
	Tools []tool.Tool
	// NoBuiltin leaves the built-in tools out (a replay answers from the
	// recording instead).
	NoBuiltin bool
	// Seed seeds the retry jitter.
	Seed uint64
	// PlaceholderKeys says the API keys are stand-ins (a replay sends
	// nothing anywhere), so there is no secret to redact from replies.
	PlaceholderKeys bool
	// Log receives diagnostics, never protocol lines; nil discards them.
	Log io.Writer
	// CodexStart, under --provider codex, starts the app-server in place
	// of running Config.Codex (a test serves a recorded transcript in
	// process); nil runs the command.
	CodexStart func(ctx context.Context, o codex.Options) (*codex.Client, error)
	// Hooks, when set, are the session's hooks (hooks.go); NoHooks runs
	// none (a replay answers hook calls from the recording instead).
	Hooks   core.Hooks
	NoHooks bool
	// HookExchange, when set, is told of every exchange with a hook
	// loaded from the hook files (a recording keeps them).
	HookExchange func(hook.Exchange)
}

func (d Deps) getenv(key string) string {
	if d.Getenv == nil {
		return os.Getenv(key)
	}
	return d.Getenv(key)
}

// Harness is one assembled harness: an engine for a project. It is safe
// to Serve or Prompt from several goroutines only with distinct sessions;
// the Engine is shared and never changed by either.
type Harness struct {
	cfg     Config
	deps    Deps
	engine  *core.Engine
	project string
	frozen  *snapshot      // what New froze from the project (freeze.go); nil in a replay
	tools   *tool.Registry // the tools New assembled
	// codex runs the turns under --provider codex (codex.go), recording
	// to codexTranscript when set.
	codex               *codexbackend.Backend
	codexTranscript     *os.File
	codexTranscriptLock *flock.Lock
}

// ConfigError is a configuration mistake New found: an unknown provider, a
// missing key, a setting out of range, a project that is not a directory.
type ConfigError struct{ Err error }

func (e *ConfigError) Error() string { return e.Err.Error() }
func (e *ConfigError) Unwrap() error { return e.Err }

// ErrBadFile marks a ConfigError about a file or directory a setting
// names (--script, --project) that is missing or malformed, rather than
// a mistake in the settings themselves: the binary exits 1 on it, not 2.
var ErrBadFile = errors.New("a named file is missing or malformed")

// badFile is err, marked ErrBadFile.
type badFile struct{ err error }

func (e badFile) Error() string        { return e.err.Error() }
func (e badFile) Unwrap() error        { return e.err }
func (e badFile) Is(target error) bool { return target == ErrBadFile }

// New assembles the harness cfg describes. Its errors are *ConfigError,
// found before any session starts.
func New(cfg Config, deps Deps) (*Harness, error) {
	h, err := assemble(cfg, deps)
	if err != nil {
		return nil, &ConfigError{Err: err}
	}
	return h, nil
}

func assemble(cfg Config, deps Deps) (*Harness, error) {
	if deps.Clock == nil {
		deps.Clock = clock.Real{}
	}
	if deps.Log == nil {
		deps.Log = io.Discard
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	prov, window, err := newProvider(&cfg, deps)
	if err != nil {
		return nil, err
	}
	project, err := projectDir(cfg.Project)
	if err != nil {
		return nil, err
	}
	all := deps.Tools
	if !deps.NoBuiltin {
		builtins, err := builtin.New(project, builtin.Options{})
		if err != nil {
			return nil, err
		}
		all = addExternal(append(builtins, deps.Tools...), project, deps)
	}
	tools, err := tool.NewRegistry(all...)
	if err != nil {
		return nil, err
	}
	log := deps.Log
	eng := &core.Engine{
		Provider:       prov,
		Tools:          tools,
		Model:          cfg.Model,
		System:         cfg.System,
		MaxIterations:  cfg.MaxIterations,
		MaxAgentTokens: cfg.MaxAgentTokens,
		ContextTokens:  window,
		OnPanic: func(r any, stack []byte) {
			fmt.Fprintf(log, "openmax: recovered from a crash inside a turn: %v\n%s", r, stack)
		},
		Hooks:   sessionHooks(project, deps),
		Secrets: secrets(deps), // provider.go
	}
	if !deps.NoBuiltin {
		// A replay answers from the recording, so only a live harness
		// reads the policy.
		rules, errs := denyRules(project, deps.getenv)
		for _, err := range errs {
			fmt.Fprintf(log, "openmax: %v; every tool call is refused until it is fixed\n", err)
		}
		if len(rules) > 0 {
			eng.Deny = rules
		}
	}
	h := &Harness{cfg: cfg, deps: deps, engine: eng, project: project, tools: tools}
	h.freezeStart() // skills and system prompt (freeze.go)
	if cfg.Provider == "codex" {
		if err := h.useCodex(); err != nil { // codex.go
			return nil, err
		}
	}
	return h, nil
}

// Engine is the assembled turn engine. A caller may adjust it (wrap its
// provider or tools) before the first session starts, never after.
func (h *Harness) Engine() *core.Engine { return h.engine }

// Project is the absolute project directory.
func (h *Harness) Project() string { return h.project }

// Config is the configuration the harness was built from.
func (h *Harness) Config() Config { return h.cfg }

// ServeOptions adjust one served session.
type ServeOptions struct {
	// NoSave keeps the session in memory: nothing is written to the state
	// directory (a recording keeps its own record).
	NoSave bool
	// Trusted skips reading the project's settings: the project counts as
	// trusted and the approval mode starts at ask, in memory (a replay).
	Trusted bool
	// Project, when set, is the directory hello reports instead of
	// Project() (a replay reports the recorded one).
	Project string
	// Handled and Stepped are stdio.Options' hooks (a replay paces the
	// recorded client with them).
	Handled func(read int, idle bool)
	Stepped func()
	// Acting is stdio.Options' hook (a recording anchors commands with it).
	Acting func(n int)
	// Reload, when set, answers reload around the harness's own answer (a
	// recording keeps what each reload froze, a replay answers from it;
	// freeze.go).
	Reload Reloader
	// Persist, with NoSave, is handed every message the session adds
	// before anything reporting it goes out; an error ends the turn with
	// an error line, as a failed write of the session file does (a
	// recording fails it once its cassette can no longer be written).
	Persist func(provider.Message) error
}

// Serve runs one session over the wire: hello on out, commands read from
// in until quit or EOF (or ctx's end, a shutdown), exactly as
// `openmax --stdio`. It opens (or, with Config.Continue, resumes) the saved
// session, reads whether the project is trusted and its approval mode, and
// returns the process exit code. Errors: *SessionError when the session
// cannot be opened (no output was written), else a failure to write out.
func (h *Harness) Serve(ctx context.Context, in io.Reader, out io.Writer) (int, error) {
	return h.ServeConn(ctx, stdio.NewStreamConn(in, out), ServeOptions{})
}

// ServeConn is Serve over a message-level connection (stdio.Conn: a
// stream's framing, an in-memory pair, a recording or replaying client),
// with the adjustments of o. It closes conn before it returns.
func (h *Harness) ServeConn(ctx context.Context, conn stdio.Conn, o ServeOptions) (int, error) {
	opts := stdio.Options{
		Engine: h.engine, Version: Version, Project: h.project, Log: h.deps.Log,
		ApprovalTimeout: h.cfg.ApprovalTimeout, Clock: h.deps.Clock,
		Handled: o.Handled, Stepped: o.Stepped, Acting: o.Acting,
	}
	opts.Refreeze = h.refreezer(o.Reload)                                                   // freeze.go
	opts.AgentSpawned = func() bool { return h.deps.getenv(builtin.AgentSpawnedEnv) != "" } // docs/policy.md
	if o.Project != "" {
		opts.Project = o.Project
	}
	sid := h.sessionID()
	if o.NoSave {
		opts.SessionID = sid
		if h.cfg.Compact || o.Persist != nil {
			opts.Session = core.NewSessionFrom(sid, nil, o.Persist)
		}
		if h.cfg.Compact { // a recording or a replay of --compact (sessionstate.go)
			opts.Session.RequestCompaction()
		}
	} else {
		s, err := h.openSession(sid)
		if err != nil {
			conn.Close()
			return 0, err
		}
		defer s.close()
		opts.SessionID, opts.Session, opts.Transcript = s.sess.ID, s.sess, s.transcript
	}
	if !o.Trusted {
		trusted, modes := h.settings()
		opts.Untrusted, opts.Modes = !trusted, modes
	}
	defer closeHooks(h.engine, h.deps.Log)
	defer h.closeCodex()
	if h.codex != nil && !opts.Untrusted {
		// The app-server starts while hello goes out, so the first turn
		// does not wait for it (a failed start is that turn's error); in
		// a project not trusted yet no turn runs, and nothing starts.
		h.codex.Prestart(h.toolSpecs())
	}
	return stdio.ServeConn(ctx, conn, opts)
}

// sessionID is the configured session id, or a fresh random one.
func (h *Harness) sessionID() string {
	if h.cfg.SessionID != "" {
		return h.cfg.SessionID
	}
	return NewSessionID()
}

// ErrUntrusted reports a turn asked for in a project not trusted yet.
var ErrUntrusted = errors.New("the project is not trusted")

func projectDir(dir string) (string, error) {
	if dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return "", fmt.Errorf("project directory: %w", err)
		}
		return wd, nil
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("project directory: %w", err)
	}
	if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
		return "", badFile{fmt.Errorf("project directory %s is not a directory", abs)}
	}
	return abs, nil
}

// ProjectDir resolves a project directory as the harness does: dir made
// absolute and required to be a directory, or the working directory when
// dir is empty.
func ProjectDir(dir string) (string, error) { return projectDir(dir) }

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if strings.TrimSpace(v) != "" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}
