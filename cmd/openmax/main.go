// Command openmax is the agent harness: it serves a session over the
// openmax-stdio/6 wire (--stdio), prints that contract (--spec stdio) and
// validates streams of it (--check --stdio). This file only wires flags to
// the packages that do the work.
package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/openmax/openmax/core"
	"github.com/openmax/openmax/core/config"
	"github.com/openmax/openmax/core/stdio"
	"github.com/openmax/openmax/core/store"
	"github.com/openmax/openmax/core/tool"
	"github.com/openmax/openmax/core/tool/builtin"
	"github.com/openmax/openmax/core/wire"
	"github.com/openmax/openmax/provider/clock"
)

// Version is the openmax build reported by hello.
const Version = "0.1.0"

func main() {
	// A closed stdout or stderr must surface as a write error (EPIPE) that
	// the server handles ("stdout is gone": cancel the turn, kill its
	// commands, exit), not as the runtime's default SIGPIPE death that
	// orphans them. Notify, unlike Ignore, leaves children started by tools
	// with the default disposition.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	// Commands run by tools must not read our API keys from /proc.
	harden()
	// SIGHUP (the terminal or the parent went away) is a shutdown, like
	// SIGINT and SIGTERM: the running turn is cancelled and drained.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr, env{clock: clock.Real{}})
	stop()
	os.Exit(code)
}

// env carries what tests substitute: the clock, extra tools and the
// environment variables.
type env struct {
	clock     clock.Clock
	tools     []tool.Tool
	getenv    func(string) string // nil means os.Getenv
	transport http.RoundTripper   // the provider's HTTP transport; nil means the default
	seed      uint64              // seeds the retry jitter
	noBuiltin bool                // leave out the built-in tools (a replay answers from the recording)
	// placeholderKeys: the API keys are stand-ins (a replay sends nothing
	// anywhere), so there is no secret to redact from replies.
	placeholderKeys bool
}

func (e env) env(key string) string {
	if e.getenv == nil {
		return os.Getenv(key)
	}
	return e.getenv(key)
}

// errUsage marks a command-line mistake (exit code 2).
var errUsage = errors.New("usage")

type options struct {
	stdio, check, json, version  bool
	cont                         bool
	spec, input, prompt          string
	provider, script, model      string
	baseURL                      string
	project, sessionID           string
	maxIterations, maxAttempts   int
	maxAgentTokens               int
	idleTimeout, approvalTimeout time.Duration
	headerTimeout, replyTimeout  time.Duration
	maxReplyBytes                byteSize
}

// flagSet defines the harness's flags, bound to a fresh options.
func flagSet() (*flag.FlagSet, *options) {
	fs := flag.NewFlagSet("openmax", flag.ContinueOnError)
	o := &options{}
	fs.BoolVar(&o.stdio, "stdio", false, "serve a session over the openmax-stdio/6 wire on stdin/stdout (with --check: validate such a stream)")
	fs.BoolVar(&o.check, "check", false, "with --stdio: read openmax stdout lines on stdin and report a verdict per line")
	fs.StringVar(&o.spec, "spec", "", "print a contract from the binary; the only one is \"stdio\"")
	fs.StringVar(&o.input, "input", "", "with --check --stdio: the stdin the client sent, to also account every user command's done")
	fs.BoolVar(&o.json, "json", false, "with --spec stdio: print the JSON Schema instead of the text")
	fs.BoolVar(&o.version, "version", false, "print the version")
	fs.BoolVar(&o.cont, "continue", false, "with --stdio: resume the project's latest session")
	fs.StringVar(&o.prompt, "p", "", "run one turn with this prompt: the answer on stdout, diagnostics on stderr; exit 4 on max_iterations, budget_exhausted or unverified, 1 on error")
	fs.StringVar(&o.provider, "provider", "", "the model provider: openai, anthropic, echo (repeats each prompt) or script (plays --script)")
	fs.StringVar(&o.script, "script", "", "with --provider script: the scenario file (YAML)")
	fs.StringVar(&o.model, "model", "", "the model name sent to the provider (openai default "+defaultOpenAIModel+", anthropic default "+defaultAnthropicModel+")")
	fs.StringVar(&o.baseURL, "base-url", "", "the provider's base URL (default: $OPENAI_BASE_URL or $ANTHROPIC_BASE_URL, else the vendor's)")
	fs.IntVar(&o.maxAgentTokens, "max-agent-tokens", 0, "tokens one turn may spend before its next request is refused (budget_exhausted); 0 means no cap")
	fs.IntVar(&o.maxAttempts, "max-attempts", 4, "attempts per model request, the first included, before a retryable failure ends the turn")
	fs.DurationVar(&o.approvalTimeout, "approval-timeout", 0, "settle an unanswered approval request as timed_out after this long (0: wait)")
	fs.DurationVar(&o.idleTimeout, "idle-timeout", 120*time.Second, "a provider stream that sends no byte for this long counts as died")
	fs.DurationVar(&o.headerTimeout, "header-timeout", 120*time.Second, "a provider that sends no response headers for this long counts as a failed connection (retried); 0: no limit")
	fs.DurationVar(&o.replyTimeout, "reply-timeout", 30*time.Minute, "a model reply (one attempt) not complete this long after its request ends the turn truncated; 0: no limit")
	o.maxReplyBytes = defaultMaxReplyBytes
	fs.Var(&o.maxReplyBytes, "max-reply-bytes", "a model reply whose response body (decompressed) passes this `size` ends the turn truncated: bytes, or with KiB, MiB, GiB; 0: no limit")
	fs.StringVar(&o.project, "project", "", "the project directory (default: the working directory)")
	fs.StringVar(&o.sessionID, "session-id", "", "use this session id instead of a random one (for reproducible transcripts)")
	fs.IntVar(&o.maxIterations, "max-iterations", core.DefaultMaxIterations, "model requests allowed per turn before it ends with max_iterations")
	return fs, o
}

// parse reads the harness's flags; -h/--help is flag.ErrHelp, any other
// mistake wraps errUsage.
func parse(args []string, stderr io.Writer) (*options, error) {
	fs, o := flagSet()
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, err
		}
		return nil, fmt.Errorf("%w: %v", errUsage, err)
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("%w: unexpected argument %q", errUsage, fs.Arg(0))
	}
	if o.maxIterations < 1 {
		return nil, fmt.Errorf("%w: --max-iterations must be at least 1", errUsage)
	}
	if o.maxAgentTokens < 0 {
		return nil, fmt.Errorf("%w: --max-agent-tokens must not be negative", errUsage)
	}
	if o.maxAttempts < 1 {
		return nil, fmt.Errorf("%w: --max-attempts must be at least 1", errUsage)
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"idle-timeout", o.idleTimeout}, {"header-timeout", o.headerTimeout}, {"reply-timeout", o.replyTimeout}} {
		if d.v < 0 {
			return nil, fmt.Errorf("%w: --%s must not be negative", errUsage, d.name)
		}
	}
	return o, nil
}

// mainUsage is `openmax --help`: every way to run, then the flags of
// --stdio and -p.
func mainUsage(w io.Writer) {
	fmt.Fprint(w, `openmax is an agent harness driven over line-delimited JSON on stdin/stdout
(openmax-stdio/6), with record and replay of model traffic for tests.

usage:
  openmax --stdio --provider openai|anthropic|echo|script [flags]  serve a session on stdin/stdout
  openmax -p PROMPT --provider ... [flags]                         one turn, the answer on stdout
  openmax replay CASSETTE|DIR [--view] [--golden F] [--update]     replay through the real engine, offline
  openmax record --cassette FILE [--proxy --upstream URL] [flags]  record a live session (or any client)
  openmax fake-provider --scenario FILE | --cassette FILE          serve a scripted or recorded API on loopback
  openmax cassette show|inject|import|sweep ...                    inspect, fault-inject, import, sweep faults
  openmax view [FILE]                                              show a transcript for people
  openmax trust [DIR]                                              trust a project (turns run only in trusted ones)
  openmax --spec stdio [--json]                                    print the wire contract
  openmax --check --stdio [--input STDIN.jsonl] < stream.jsonl    validate openmax stdout
  openmax help [COMMAND]                                           this help, or a command's
  openmax version                                                  the version

Each command takes -h/--help. Exit codes: 0 done (help included), 2 usage
error, 1 failure; -p also exits 4 on max_iterations, budget_exhausted or
unverified.

flags of --stdio and -p:
`)
	fs, _ := flagSet()
	fs.SetOutput(w)
	fs.PrintDefaults()
}

// subcommands are the first words openmax knows.
var subcommands = []string{"fake-provider", "record", "replay", "cassette", "trust", "view", "help", "version"}

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, e env) int {
	if len(args) > 0 {
		switch args[0] {
		case "help":
			if len(args) == 1 {
				mainUsage(stdout)
				return 0
			}
			if !slices.Contains(subcommands, args[1]) || args[1] == "help" || args[1] == "version" {
				fmt.Fprintf(stderr, "openmax help: no command %q (commands: %s)\n", args[1], strings.Join(subcommands, ", "))
				return 2
			}
			return run(ctx, []string{args[1], "--help"}, stdin, stdout, stderr, e)
		case "version":
			fmt.Fprintln(stdout, "openmax", Version)
			return 0
		case "view":
			return runView(args[1:], stdin, stdout, stderr)
		case "fake-provider":
			return runFakeProvider(ctx, args[1:], stdout, stderr, e)
		case "record":
			return runRecord(ctx, args[1:], stdin, stdout, stderr, e)
		case "replay":
			return runReplay(ctx, args[1:], stdout, stderr, e)
		case "cassette":
			return runCassette(args[1:], stdout, stderr)
		case "trust":
			return runTrust(args[1:], stdout, stderr, e)
		}
	}
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		msg := fmt.Sprintf("openmax: unknown command %q", args[0])
		if s := suggest(args[0], subcommands); s != "" {
			msg += fmt.Sprintf("; did you mean %q?", s)
		}
		fmt.Fprintf(stderr, "%s (see openmax help)\n", msg)
		return 2
	}
	o, err := parse(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		mainUsage(stdout)
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "openmax: %v (see openmax --help)\n", err)
		return 2
	}
	switch {
	case o.version:
		fmt.Fprintln(stdout, "openmax", Version)
		return 0
	case o.spec != "":
		return runSpec(o, stdout, stderr)
	case o.check:
		if !o.stdio {
			fmt.Fprintln(stderr, "openmax: --check needs --stdio (the only contract it checks)")
			return 2
		}
		return runCheck(o.input, stdin, stdout, stderr)
	case o.prompt != "":
		if o.stdio {
			fmt.Fprintln(stderr, "openmax: -p and --stdio are two ways to run; pick one")
			return 2
		}
		return runPrompt(ctx, o, stdout, stderr, e)
	case o.stdio:
		return runStdio(ctx, o, stdin, stdout, stderr, e)
	}
	fmt.Fprintln(stderr, "openmax: nothing to do; try --stdio, --spec stdio or --check --stdio (see -h)")
	return 2
}

func runSpec(o *options, stdout, stderr io.Writer) int {
	if o.spec != "stdio" {
		fmt.Fprintf(stderr, "openmax: unknown contract %q for --spec; the only one is \"stdio\"\n", o.spec)
		return 2
	}
	write := wire.WriteSpec
	if o.json {
		write = wire.WriteJSONSchema
	}
	if err := write(stdout); err != nil {
		fmt.Fprintf(stderr, "openmax: %v\n", err)
		return 1
	}
	return 0
}

func runCheck(input string, stdin io.Reader, stdout, stderr io.Writer) int {
	c := wire.NewChecker()
	if input != "" {
		data, err := os.ReadFile(input)
		if err != nil {
			fmt.Fprintf(stderr, "openmax: check: %v\n", err)
			return 2
		}
		c.SetInput(data)
	}
	bw := newBufferedWriter(stdout)
	bad, err := c.Stream(stdin, func(v wire.Verdict) {
		switch {
		case v.Line == 0:
			fmt.Fprintf(bw, "end: %v\n", v.Err)
		case v.Err != nil:
			fmt.Fprintf(bw, "%d: %v\n", v.Line, v.Err)
		default:
			fmt.Fprintf(bw, "%d: ok\n", v.Line)
		}
	})
	if ferr := bw.Flush(); ferr != nil && err == nil {
		err = ferr
	}
	if err != nil {
		fmt.Fprintf(stderr, "openmax: check: %v\n", err)
		return 1
	}
	if bad > 0 {
		fmt.Fprintf(stderr, "openmax: check: %d violation(s)\n", bad)
		return 1
	}
	return 0
}

func runStdio(ctx context.Context, o *options, stdin io.Reader, stdout, stderr io.Writer, e env) int {
	eng, project, err := buildEngine(o, e, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "openmax: %v\n", err)
		return 2
	}
	sess, tx, done, code := openSession(o, e, project, stderr)
	if sess == nil {
		return code
	}
	defer done()
	trusted, modes := projectSettings(e, project, stderr)
	code, err = stdio.Serve(ctx, stdin, stdout, stdio.Options{
		Engine: eng, SessionID: sess.ID, Session: sess, Transcript: tx,
		Version: Version, Project: project, Log: stderr,
		Untrusted: !trusted, Modes: modes,
		ApprovalTimeout: o.approvalTimeout, Clock: e.clock,
	})
	if err != nil {
		fmt.Fprintf(stderr, "openmax: %v\n", err)
		return 1
	}
	return code
}

// projectSettings reads whether project is trusted and binds its saved
// approval mode. Without a readable config directory the project counts as
// untrusted and the mode lives in memory.
func projectSettings(e env, project string, stderr io.Writer) (bool, stdio.ModeStore) {
	dir, err := config.Dir(e.env)
	var p *config.Projects
	if err == nil {
		p, err = config.Open(dir)
	}
	if err != nil {
		fmt.Fprintf(stderr, "openmax: %v; the project counts as untrusted\n", err)
		return false, unsavable{err: err}
	}
	return p.Trusted(project), config.ModeStore{P: p, Project: project}
}

// unsavable is the mode store of a session whose settings cannot be read:
// the default mode, and every approval_mode refused (the contract
// acknowledges a mode only after it is persisted).
type unsavable struct{ err error }

func (unsavable) Mode() string { return config.DefaultMode }

func (u unsavable) SetMode(string) error {
	return fmt.Errorf("the settings cannot be read, so nothing can be saved: %w", u.err)
}

// runTrust is `openmax trust [DIR]`.
func runTrust(args []string, stdout, stderr io.Writer, e env) int {
	c := command{name: "openmax trust", usage: "[DIR]",
		purpose: "Trust a project directory (default: the working directory): turns run only in trusted projects."}
	fs := c.flags()
	args, code, ok := c.parse(fs, args, stdout, stderr)
	if !ok {
		return code
	}
	if len(args) > 1 {
		return c.usageError(stderr, "want at most one directory, got %d", len(args))
	}
	dir := ""
	if len(args) == 1 {
		dir = args[0]
	}
	project, err := projectDir(dir)
	if err == nil {
		var cdir string
		if cdir, err = config.Dir(e.env); err == nil {
			var p *config.Projects
			if p, err = config.Open(cdir); err == nil {
				err = p.Trust(project)
			}
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "openmax trust: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "trusted %s\n", project)
	return 0
}

// openSession opens the session on disk: the project's latest one with
// --continue (exit 2 when there is none, 1 when it cannot be read or
// another process owns it), else a new one. Without a state directory a
// new session runs in memory, with a warning. A nil session means exit
// with code.
func openSession(o *options, e env, project string, stderr io.Writer) (*core.Session, *wire.Transcript, func(), int) {
	sid := o.sessionID
	if sid == "" {
		sid = newSessionID()
	}
	memory := func(why error) (*core.Session, *wire.Transcript, func(), int) {
		fmt.Fprintf(stderr, "openmax: this session is not saved: %v\n", why)
		return core.NewSession(sid), nil, func() {}, 0
	}
	fail := func(code int, format string, a ...any) (*core.Session, *wire.Transcript, func(), int) {
		fmt.Fprintf(stderr, "openmax: "+format+"\n", a...)
		return nil, nil, nil, code
	}
	dir, err := store.StateDir(e.env)
	if err != nil {
		if o.cont {
			return fail(1, "--continue: %v", err)
		}
		return memory(err)
	}
	st, err := store.Open(dir, project)
	if err != nil {
		if o.cont {
			return fail(1, "--continue: %v", err)
		}
		return memory(err)
	}
	if !o.cont {
		w, err := st.Create(sid)
		if err != nil {
			return memory(err)
		}
		return core.NewSessionFrom(sid, nil, w.Append), nil, func() { w.Close() }, 0
	}
	latest, err := st.Latest()
	if errors.Is(err, store.ErrNoSession) {
		return fail(2, "--continue: no prior session in %s", project)
	}
	if err != nil {
		return fail(1, "--continue: %v", err)
	}
	w, msgs, err := st.Continue(latest)
	if err != nil {
		return fail(1, "--continue: %v", err)
	}
	tmsgs, truncated := store.Transcript(msgs)
	return core.NewSessionFrom(latest, msgs, w.Append), &wire.Transcript{Messages: tmsgs, Truncated: truncated}, func() { w.Close() }, 0
}

// runPrompt is `openmax -p PROMPT`: one turn, the reply text on stdout as
// it streams, everything else on stderr.
func runPrompt(ctx context.Context, o *options, stdout, stderr io.Writer, e env) int {
	if strings.TrimSpace(o.prompt) == "" {
		fmt.Fprintln(stderr, "openmax: -p needs a non-empty prompt")
		return 2
	}
	eng, project, err := buildEngine(o, e, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "openmax: %v\n", err)
		return 2
	}
	if trusted, _ := projectSettings(e, project, stderr); !trusted {
		fmt.Fprintf(stderr, "openmax: the project %s is not trusted; run `openmax trust %s` first\n", project, project)
		return 1
	}
	sid := o.sessionID
	if sid == "" {
		sid = newSessionID()
	}
	sess := core.NewSession(sid)
	// Nobody can answer an approval here: mutating calls are declined.
	sess.SetApprovals(func() string { return "ask" }, nil)
	endsLine := true
	stop := eng.RunTurn(ctx, sess, o.prompt, func(ev wire.Event) {
		switch ev := ev.(type) {
		case wire.Token:
			fmt.Fprint(stdout, ev.Text)
			endsLine = strings.HasSuffix(ev.Text, "\n")
		case wire.MessageDone:
			if !endsLine {
				fmt.Fprintln(stdout)
				endsLine = true
			}
		case wire.Error:
			fmt.Fprintf(stderr, "openmax: %s\n", ev.Message)
		case wire.Retry:
			fmt.Fprintf(stderr, "openmax: retrying (attempt %d of %d): %s\n", ev.Attempt, ev.MaxAttempts, ev.Reason)
		case wire.ToolStart:
			fmt.Fprintf(stderr, "openmax: tool %s %s\n", ev.Name, ev.Args)
		case wire.ToolEnd:
			if !ev.OK {
				fmt.Fprintf(stderr, "openmax: tool call %s failed: %.200s\n", ev.CallID, ev.Output)
			}
		}
	})
	if !endsLine {
		fmt.Fprintln(stdout)
	}
	switch stop {
	case wire.StopMaxIterations, wire.StopBudgetExhausted, wire.StopUnverified:
		fmt.Fprintf(stderr, "openmax: the turn ended %s\n", stop)
		return 4
	case wire.StopError:
		return 1
	case wire.StopCancelled, wire.StopTruncated:
		fmt.Fprintf(stderr, "openmax: the turn ended %s\n", stop)
	}
	return 0
}

// buildEngine makes the turn engine the flags describe, and resolves the
// project directory. Errors are configuration mistakes.
func buildEngine(o *options, e env, stderr io.Writer) (*core.Engine, string, error) {
	prov, window, err := newProvider(o, e)
	if err != nil {
		return nil, "", err
	}
	project, err := projectDir(o.project)
	if err != nil {
		return nil, "", err
	}
	all := e.tools
	if !e.noBuiltin {
		builtins, err := builtin.New(project, builtin.Options{})
		if err != nil {
			return nil, "", err
		}
		all = append(builtins, e.tools...)
	}
	tools, err := tool.NewRegistry(all...)
	if err != nil {
		return nil, "", err
	}
	return &core.Engine{
		Provider:       prov,
		Tools:          tools,
		Model:          o.model,
		MaxIterations:  o.maxIterations,
		MaxAgentTokens: o.maxAgentTokens,
		ContextTokens:  window,
		OnPanic: func(r any, stack []byte) {
			fmt.Fprintf(stderr, "openmax: recovered from a crash inside a turn: %v\n%s", r, stack)
		},
	}, project, nil
}

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
		return "", fmt.Errorf("project directory %s is not a directory", abs)
	}
	return abs, nil
}

func newSessionID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "s-" + hex.EncodeToString(b[:])
}

func newBufferedWriter(w io.Writer) *bufio.Writer { return bufio.NewWriterSize(w, 64<<10) }
