package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/openmax/openmax/replay/appserver"
)

// fakeAppServerCommand is `openmax fake-app-server`.
var fakeAppServerCommand = command{name: "openmax fake-app-server",
	usage: "--transcript FILE [--log FILE [--overwrite]] [app-server [-c KEY=VALUE]...]",
	purpose: "Play codex app-server from a recorded transcript (the codex client's {dir,msg} lines) on stdin/stdout,\n" +
		"so a codex client runs against it with no codex installed: set the client's command to\n" +
		"openmax fake-app-server --transcript FILE. codex's own arguments after it (app-server -c KEY=VALUE)\n" +
		"are accepted and ignored. stdout carries only protocol lines, diagnostics go to stderr. Exit 0 when\n" +
		"the client closed stdin after the whole transcript, 1 on a miss, lines left or a missing or bad\n" +
		"transcript, 2 on bad arguments."}

// runFakeAppServer replays a transcript to the client on stdin/stdout
// until it closes stdin.
func runFakeAppServer(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	c := fakeAppServerCommand
	ours, codexArgs := splitCodexArgs(args)
	fs := c.flags()
	path := fs.String("transcript", "", "the transcript to replay (JSON lines {\"dir\":\"send\"|\"recv\",\"msg\":...})")
	logPath := fs.String("log", "", "also write the diagnostics, and a trace of every line replayed, to this new file")
	overwrite := fs.Bool("overwrite", false, "replace the --log file if it exists (without it, an existing file is refused and left as it is)")
	pos, code, ok := c.parse(fs, ours, stdout, stderr)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		return c.usageError(stderr, "unexpected argument %q", pos[0])
	}
	if err := checkCodexArgs(codexArgs); err != nil {
		return c.usageError(stderr, "%v", err)
	}
	if *path == "" {
		return c.usageError(stderr, "give --transcript FILE")
	}
	logOut := outputFile{path: *logPath, overwrite: *overwrite}
	if *logPath != "" {
		if err := logOut.check(*path); err != nil {
			return c.usageError(stderr, "--log: %v", err)
		}
	} else if *overwrite {
		return c.usageError(stderr, "--overwrite is for --log FILE")
	}
	t, err := appserver.ParseFile(*path, 0)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", c.name, err)
		return 1
	}
	diag := stderr
	var trace io.Writer
	if *logPath != "" {
		f, err := logOut.create(0o644)
		if err != nil {
			fmt.Fprintf(stderr, "%s: %v\n", c.name, err)
			return 1
		}
		defer f.Close()
		diag, trace = io.MultiWriter(stderr, f), f
	}
	if err := appserver.Serve(ctx, t, stdin, stdout, appserver.Options{Trace: trace}); err != nil {
		fmt.Fprintf(diag, "%s: %s: %v\n", c.name, *path, err)
		return 1
	}
	if trace != nil {
		fmt.Fprintf(trace, "%s: %s: all %d lines replayed\n", c.name, *path, len(t.Lines))
	}
	return 0
}

// splitCodexArgs splits the command line at the first "app-server" that
// is not the value of one of our flags: what follows is codex's own.
func splitCodexArgs(args []string) (ours, codex []string) {
	for i := 0; i < len(args); i++ {
		switch args[i] {
		case "app-server":
			return args[:i], args[i+1:]
		case "--":
			return args, nil
		case "-transcript", "--transcript", "-log", "--log":
			i++ // its value
		}
	}
	return args, nil
}

// checkCodexArgs accepts the arguments a codex client puts after
// "app-server": config overrides, -c KEY=VALUE or --config KEY=VALUE.
func checkCodexArgs(args []string) error {
	for i := 0; i < len(args); i++ {
		a := args[i]
		var kv string
		switch {
		case a == "-c" || a == "--config":
			if i+1 == len(args) {
				return fmt.Errorf("codex argument %s has no KEY=VALUE", a)
			}
			i++
			kv = args[i]
		case strings.HasPrefix(a, "-c="), strings.HasPrefix(a, "--config="):
			_, kv, _ = strings.Cut(a, "=")
		default:
			return fmt.Errorf("codex argument %q is not -c KEY=VALUE (the only codex arguments the fake accepts)", a)
		}
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			return fmt.Errorf("codex argument -c %q is not KEY=VALUE", kv)
		}
	}
	return nil
}
