// Command openmax is the agent harness: it serves a session over the
// openmax-stdio/6 wire (--stdio), prints that contract (--spec stdio) and
// validates streams of it (--check --stdio). This file only wires flags to
// the packages that do the work.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"runtime/pprof"
	"slices"
	"strings"
	"syscall"

	"github.com/openmax/openmax/core/harness"
	"github.com/openmax/openmax/core/tool"
	"github.com/openmax/openmax/core/wire"
	"github.com/openmax/openmax/internal/reaper"
	"github.com/openmax/openmax/provider/clock"
	"github.com/openmax/openmax/provider/codec"
	"github.com/openmax/openmax/provider/codex"
	_ "github.com/openmax/openmax/provider/vendors" // every built-in vendor wire
)

// Version is the openmax build reported by hello.
const Version = harness.Version

func main() {
	// A closed stdout or stderr must surface as a write error (EPIPE) that
	// the server handles ("stdout is gone": cancel the turn, kill its
	// commands, exit), not as the runtime's default SIGPIPE death that
	// orphans them. Notify, unlike Ignore, leaves children started by tools
	// with the default disposition.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	// Commands run by tools must not read our API keys from /proc.
	harden()
	// What tools start stays in our process tree, however it daemonizes,
	// so an openmax it starts sees us among its parents (the agent guard)
	// and nothing it left behind outlives us. Where that cannot be done
	// (no pidfds, no subreaper), the guard still has the marker.
	orphans, _ := reaper.Enable()
	// OPENMAX_CPUPROFILE=FILE profiles the whole run, for performance
	// work on the path users run (docs/testing.md).
	stopProfile := startProfile(os.Getenv("OPENMAX_CPUPROFILE"))
	// SIGHUP (the terminal or the parent went away) is a shutdown, like
	// SIGINT and SIGTERM: the running turn is cancelled and drained.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr, env{clock: clock.Real{}, getenv: agentEnv(asksAgentMarker(os.Args[1:])), oneProc: true})
	stop()
	stopProfile()
	if os.Getenv("OPENMAX_PEAK_RSS") != "" {
		reportPeakRSS(os.Stderr)
	}
	orphans.Stop(true)
	os.Exit(code)
}

// reportPeakRSS says the process's peak resident memory, as the kernel
// keeps it for this program's own address space (VmHWM): getrusage's
// maxrss would also count the parent's memory a child shares between fork
// and exec, which a large parent (a test binary) makes most of it.
func reportPeakRSS(w io.Writer) {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		fmt.Fprintf(w, "openmax: peak RSS unknown: %v\n", err)
		return
	}
	for _, l := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			fmt.Fprintf(w, "openmax: peak RSS %s\n", strings.TrimSpace(v))
			return
		}
	}
	fmt.Fprintln(w, "openmax: peak RSS unknown: no VmHWM in /proc/self/status")
}

// startProfile starts a CPU profile into path ("" for none) and returns
// what stops it; a file that cannot be made is said on stderr and the
// run goes on unprofiled.
func startProfile(path string) func() {
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err == nil {
		err = pprof.StartCPUProfile(f)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "openmax: OPENMAX_CPUPROFILE: %v\n", err)
		return func() {}
	}
	return func() { pprof.StopCPUProfile(); f.Close() }
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
	// codexStart starts the app-server of --provider codex in place of
	// its command (tests: a recorded transcript served in process).
	codexStart func(ctx context.Context, o codex.Options) (*codex.Client, error)
	// sweepGC: `cassette sweep` sets the process's collector for the sweep
	// (sweepgc.go); the binary's run does, a test's in-process run does not.
	sweepGC bool
	// oneProc: replays run on one P (oneproc.go); set by main, not by a
	// test's in-process run.
	oneProc bool
}

func (e env) env(key string) string {
	if e.getenv == nil {
		return os.Getenv(key)
	}
	return e.getenv(key)
}

// deps is e as the harness takes it, diagnostics going to log.
func (e env) deps(log io.Writer) harness.Deps {
	return harness.Deps{Transport: e.transport, Clock: e.clock, Getenv: e.getenv, Tools: e.tools,
		NoBuiltin: e.noBuiltin, Seed: e.seed, PlaceholderKeys: e.placeholderKeys, Log: log, CodexStart: e.codexStart}
}

// errUsage marks a command-line mistake (exit code 2).
var errUsage = errors.New("usage")

// options are the flags of the binary itself; the harness's settings are
// its Config, whose fields the remaining flags are bound to.
type options struct {
	stdio, check, strict, json, version bool
	spec, input, prompt                 string
	cfg                                 harness.Config
}

// flagSet defines the binary's flags, bound to a fresh options.
func flagSet() (*flag.FlagSet, *options) {
	fs := flag.NewFlagSet("openmax", flag.ContinueOnError)
	o := &options{cfg: harness.Defaults()}
	fs.BoolVar(&o.stdio, "stdio", false, "serve a session over the openmax-stdio/6 wire on stdin/stdout (with --check: validate such a stream)")
	fs.BoolVar(&o.check, "check", false, "with --stdio: read openmax stdout lines on stdin and report a verdict per line")
	fs.StringVar(&o.spec, "spec", "", "print a contract from the binary; the only one is \"stdio\"")
	fs.BoolVar(&o.strict, "strict", false, "with --check --stdio: also hold the stream to openmax's own habits (docs/checker.md), beyond what the spec requires")
	fs.StringVar(&o.input, "input", "", "with --check --stdio: the stdin the client sent, to also account every user command's done")
	fs.BoolVar(&o.json, "json", false, "with --spec stdio: print the JSON Schema instead of the text")
	fs.BoolVar(&o.version, "version", false, "print the version")
	fs.StringVar(&o.prompt, "p", "", "run one turn with this prompt: the answer on stdout, diagnostics on stderr; exit 4 on max_iterations, budget_exhausted or unverified, 1 on error")
	o.cfg.Flags(fs)
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
	if err := o.cfg.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %v", errUsage, err)
	}
	return o, nil
}

// mainUsage is `openmax --help`: every way to run, then the flags of
// --stdio and -p.
func mainUsage(w io.Writer) {
	fmt.Fprint(w, `openmax is an agent harness driven over line-delimited JSON on stdin/stdout
(openmax-stdio/6), with record and replay of model traffic for tests.

usage:
  openmax --stdio --provider PROVIDER [flags]                      serve a session on stdin/stdout
  openmax -p PROMPT --provider ... [flags]                         one turn, the answer on stdout
  openmax replay CASSETTE|DIR [--view] [--golden F] [--update]     replay through the real engine, offline
  openmax record --cassette FILE [--proxy --upstream URL] [flags]  record a live session (or any client)
  openmax fake-provider --scenario FILE | --cassette FILE          serve a scripted or recorded API on loopback
  openmax fake-app-server --transcript FILE [--log FILE]           play codex app-server from a recorded transcript
  openmax cassette show|inject|import|sweep|prune|scan|verify ...  inspect, fault-inject, import, sweep, prune, scan, verify live
  openmax view [FILE]                                              show a transcript for people
  openmax report CASSETTE|DIR [--sweep] --html OUTDIR              a static HTML report: timelines, transcripts, suite, sweep
  openmax report merge REPORT... [--junit F] [--json F]            join a split run's shard reports into one
  openmax trust [DIR]                                              trust a project (turns run only in trusted ones)
  openmax --approve SOURCE_PATH [--project DIR]                    approve an external tool's file as it is now
  openmax --spec stdio [--json]                                    print the wire contract
  openmax --check --stdio [--strict] [--input STDIN.jsonl] < stream.jsonl    validate openmax stdout
  openmax help [COMMAND]                                           this help, or a command's
  openmax version                                                  the version

Each command takes -h/--help. Exit codes, the same for every command:
  0  done (help included)
  2  usage error: the command line itself is wrong (an unknown flag, a
     missing or extra argument, a flag value that does not parse, flags that
     do not go together, an output that would replace its input or, without
     --overwrite, an existing file); nothing was done
  1  failure: the command line was right but the work failed, a file it
     names missing, unreadable or malformed included
  -p also exits 4 on max_iterations, budget_exhausted or unverified.

flags of --stdio and -p:
`)
	fs, _ := flagSet()
	fs.SetOutput(w)
	fs.PrintDefaults()
}

// subcommands are the first words openmax knows.
var subcommands = []string{"fake-provider", "fake-app-server", "record", "replay", "cassette", "report", "trust", "view", "help", "version"}

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, e env) int {
	if len(args) > 0 {
		switch args[0] {
		case "help":
			if len(args) == 1 {
				mainUsage(stdout)
				return 0
			}
			if !slices.Contains(subcommands, args[1]) || args[1] == "help" {
				fmt.Fprintf(stderr, "openmax help: no command %q (commands: %s)\n", args[1], strings.Join(subcommands, ", "))
				return 2
			}
			return run(ctx, []string{args[1], "--help"}, stdin, stdout, stderr, e)
		case "version":
			c := command{name: "openmax version", usage: "", purpose: "Print the version of this openmax."}
			pos, code, ok := c.parse(c.flags(), args[1:], stdout, stderr)
			if !ok {
				return code
			}
			if len(pos) > 0 {
				return c.usageError(stderr, "unexpected argument %q", pos[0])
			}
			fmt.Fprintln(stdout, "openmax", Version)
			return 0
		case "view":
			return runView(args[1:], stdin, stdout, stderr)
		case "fake-provider":
			return runFakeProvider(ctx, args[1:], stdout, stderr, e)
		case "fake-app-server":
			return runFakeAppServer(ctx, args[1:], stdin, stdout, stderr)
		case "record":
			return runRecord(ctx, args[1:], stdin, stdout, stderr, e)
		case "replay":
			return runReplay(ctx, args[1:], stdout, stderr, e)
		case "cassette":
			return runCassette(args[1:], stdout, stderr)
		case "report":
			return runReport(ctx, args[1:], stdout, stderr, e)
		case "trust":
			return runTrust(args[1:], stdout, stderr, e)
		}
	}
	if isApprove(args) {
		return runApprove(args, stdout, stderr, e)
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
	case o.strict && !o.check:
		fmt.Fprintln(stderr, "openmax: --strict needs --check --stdio")
		return 2
	case o.check:
		if !o.stdio {
			fmt.Fprintln(stderr, "openmax: --check needs --stdio (the only contract it checks)")
			return 2
		}
		return runCheck(o.input, o.strict, stdin, stdout, stderr)
	case o.prompt != "":
		if o.stdio {
			fmt.Fprintln(stderr, "openmax: -p and --stdio are two ways to run; pick one")
			return 2
		}
		return runPrompt(ctx, o, stdout, stderr, e)
	case o.stdio:
		return runStdio(ctx, o, stdin, stdout, stderr, e)
	}
	fmt.Fprint(stderr, `openmax: nothing to do. To start:
  openmax replay CASSETTE --view       watch a recorded session, offline (the repository's cassettes/story.yaml)
  openmax --stdio --provider NAME      serve a session on stdin/stdout
  openmax help                         every command, and openmax help COMMAND for one
`)
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

func runCheck(input string, strict bool, stdin io.Reader, stdout, stderr io.Writer) int {
	var opts []wire.CheckOption
	if strict {
		opts = append(opts, wire.Strict())
	}
	c := wire.NewChecker(opts...)
	if input != "" {
		data, err := os.ReadFile(input)
		if err != nil {
			fmt.Fprintf(stderr, "openmax: check: %v\n", err)
			return 1
		}
		c.SetInput(data)
	}
	bw := newBufferedWriter(stdout)
	var out []byte // reused: a valid stream has millions of verdicts
	bad, err := c.Stream(stdin, func(v wire.Verdict) {
		out = append(v.AppendLine(out[:0]), '\n')
		_, _ = bw.Write(out) // a failed write shows again at Flush
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
	h, err := harness.New(o.cfg, e.deps(stderr))
	if err != nil {
		return configError(err, stderr)
	}
	code, err := h.Serve(ctx, stdin, stdout)
	if err != nil {
		fmt.Fprintf(stderr, "openmax: %v\n", err)
		if errors.Is(err, harness.ErrNoPriorSession) {
			return 2
		}
		return 1
	}
	return code
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
	project, err := harness.Trust(dir, e.env)
	if err != nil {
		fmt.Fprintf(stderr, "openmax trust: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "trusted %s\n", project)
	return 0
}

// runPrompt is `openmax -p PROMPT`: one turn, the reply text on stdout as
// it streams, everything else on stderr.
func runPrompt(ctx context.Context, o *options, stdout, stderr io.Writer, e env) int {
	if strings.TrimSpace(o.prompt) == "" {
		fmt.Fprintln(stderr, "openmax: -p needs a non-empty prompt")
		return 2
	}
	if o.cfg.Provider == "" {
		fmt.Fprintf(stderr, "openmax: -p needs --provider (%s, echo, script or codex)\n", strings.Join(codec.Providers(), ", "))
		return 2
	}
	h, err := harness.New(o.cfg, e.deps(stderr))
	if err != nil {
		return configError(err, stderr)
	}
	stop, err := h.Prompt(ctx, o.prompt, stdout)
	if err != nil {
		fmt.Fprintf(stderr, "openmax: %v\n", err)
		return 1
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

// configError reports an error of harness.New and returns its exit code:
// 1 for a named file that is missing or malformed, 2 for any other
// mistake in the settings.
func configError(err error, stderr io.Writer) int {
	fmt.Fprintf(stderr, "openmax: %v\n", err)
	if errors.Is(err, harness.ErrBadFile) {
		return 1
	}
	return 2
}

func newBufferedWriter(w io.Writer) *bufio.Writer { return bufio.NewWriterSize(w, 64<<10) }
