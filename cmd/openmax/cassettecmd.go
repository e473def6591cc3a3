package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/openmax/openmax/recorder/cassette"
	"github.com/openmax/openmax/recorder/edit"
	"github.com/openmax/openmax/recorder/importer"
)

// cassetteUsage lists the cassette subcommands.
func cassetteUsage(w io.Writer) {
	fmt.Fprint(w, `usage:
  openmax cassette show FILE                                  a readable timeline of a cassette
  openmax cassette inject FILE OUT --op SPEC [--op SPEC ...] [--overwrite]
                                                              write a copy of FILE with faults injected
  openmax cassette import [--from auto|`+strings.Join(importer.Formats(), "|")+`] [--overwrite] IN OUT
                                                              convert another tool's recording
  openmax cassette sweep FILE|DIR [flags]                     every single fault at every place, judged
  openmax cassette prune FILE|DIR [--check]                   remove the interactions no replay uses
  openmax cassette scan [--allow FILE] [--json] FILE|DIR...   secrets a scrubber missed; exit 1 on any
  openmax cassette verify --live FILE [--base-url URL]        the live API's drift from the recorded wire shape
  openmax cassette diff A B [--json] [--no-timing]            what changed between two recordings (exit 1 if anything)
  openmax cassette to-script FILE [OUT] [--overwrite] [--no-delays]
                                                              the recording as a fake-provider scenario to edit

Each takes -h/--help. OUT is never the input, and an existing OUT is
kept unless --overwrite.
`)
}

// cassetteCommands describe the subcommands that share runCassette's body.
var cassetteCommands = map[string]command{
	"show": {name: "openmax cassette show", usage: "FILE",
		purpose: "Print a readable timeline of a cassette (any format cassette import reads): session, commands, each interaction's chunks, text, signal and end."},
	"inject": {name: "openmax cassette inject", usage: "FILE OUT --op SPEC [--op SPEC ...] [--overwrite]",
		purpose: "Write a copy of FILE with faults injected (429/5xx before an interaction; truncate, reset or stream-error inside one, recover=true to serve it once)."},
	"import": {name: "openmax cassette import", usage: "[--from auto|" + strings.Join(importer.Formats(), "|") + "] [--overwrite] IN OUT",
		purpose: "Convert another tool's recording (vcrpy, go-vcr v1/v4, httprr) into an openmax cassette with a made-up session."},
}

// cassetteRunners are the subcommands with a runner of their own, each in
// its own file; the others share runCassette's body (cassetteCommands).
var cassetteRunners = map[string]func(args []string, stdout, stderr io.Writer) int{
	"sweep":     runSweepCmd,
	"prune":     runPruneCmd,
	"scan":      runScan,
	"verify":    runVerifyCmd,
	"diff":      runCassetteDiff,
	"to-script": runToScript,
}

// cassetteNames are every subcommand's name, sorted (for suggestions).
func cassetteNames() []string {
	names := slices.Collect(maps.Keys(cassetteRunners))
	for name := range cassetteCommands {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// runCassette is `openmax cassette SUBCOMMAND ...`.
func runCassette(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		cassetteUsage(stderr)
		return 2
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		cassetteUsage(stdout)
		return 0
	}
	if run, ok := cassetteRunners[args[0]]; ok {
		return run(args[1:], stdout, stderr)
	}
	c, known := cassetteCommands[args[0]]
	if !known {
		msg := fmt.Sprintf("openmax cassette: unknown command %q", args[0])
		if s := suggest(args[0], cassetteNames()); s != "" {
			msg += fmt.Sprintf("; did you mean %q?", s)
		}
		fmt.Fprintln(stderr, msg)
		cassetteUsage(stderr)
		return 2
	}
	fs := c.flags()
	var ops multiFlag
	from := "auto"
	var overwrite bool
	if args[0] != "show" {
		fs.BoolVar(&overwrite, "overwrite", false, "replace OUT if it exists (without it, an existing file is refused and left as it is; OUT is never the input)")
	}
	switch args[0] {
	case "inject":
		fs.Var(&ops, "op", "a fault: 429@N[:retry-after=S], 5xx codes like 503@N, truncate@N:chunk=K[,recover=true], reset@N:byte=B[,recover=true], stream-error@N:chunk=K[,code=C][,recover=true] (on a Responses stream, a response.failed event); repeatable")
	case "import":
		fs.StringVar(&from, "from", "auto", "the recording's format: auto, "+strings.Join(importer.Formats(), ", "))
	}
	pos, code, ok := c.parse(fs, args[1:], stdout, stderr)
	if !ok {
		return code
	}
	usage := func() int { return c.usageError(stderr, "wrong arguments") }
	switch args[0] {
	case "show":
		if len(pos) != 1 {
			return usage()
		}
		f, err := loadCassette(pos[0], "openmax cassette show", stderr)
		if err == nil {
			err = edit.Show(stdout, f)
		}
		if err != nil {
			fmt.Fprintf(stderr, "openmax cassette show: %v\n", err)
			return 1
		}
	case "inject":
		if len(pos) != 2 || len(ops) == 0 {
			return usage()
		}
		out := outputFile{path: pos[1], overwrite: overwrite}
		if err := out.check(pos[0]); err != nil {
			return c.usageError(stderr, "%v", err)
		}
		f, err := loadCassette(pos[0], "openmax cassette inject", stderr)
		if err != nil {
			fmt.Fprintf(stderr, "openmax cassette inject: %v\n", err)
			return 1
		}
		for _, spec := range ops {
			op, err := edit.ParseOp(spec)
			if err == nil {
				f, err = edit.Inject(f, op)
			}
			if err != nil {
				fmt.Fprintf(stderr, "openmax cassette inject: --op %s: %v\n", spec, err)
				return 2
			}
		}
		if err := saveCassette(f, out); err != nil {
			fmt.Fprintf(stderr, "openmax cassette inject: %v\n", err)
			return 1
		}
	case "import":
		if len(pos) != 2 {
			return usage()
		}
		if from != "auto" && !slices.Contains(importer.Formats(), from) {
			return c.usageError(stderr, "--from %q: the formats are auto, %s", from, strings.Join(importer.Formats(), ", "))
		}
		out := outputFile{path: pos[1], overwrite: overwrite}
		if err := out.check(pos[0]); err != nil {
			return c.usageError(stderr, "%v", err)
		}
		data, err := cassette.ReadFile(pos[0])
		if err != nil {
			fmt.Fprintf(stderr, "openmax cassette import: %v\n", err)
			return 1
		}
		f, notes, err := importer.ImportNotes(from, data)
		for _, n := range notes {
			fmt.Fprintf(stderr, "openmax cassette import: %s: %s\n", pos[0], n)
		}
		if err != nil {
			fmt.Fprintf(stderr, "openmax cassette import: %s: %v\n", pos[0], err)
			return 1
		}
		if s, err := importer.Session(f); err == nil {
			f.Session = s
		} else {
			fmt.Fprintf(stderr, "openmax cassette import: no session made up (%v); replay it with fake-provider --cassette\n", err)
		}
		if err := saveCassette(f, out); err != nil {
			fmt.Fprintf(stderr, "openmax cassette import: %v\n", err)
			return 1
		}
		fmt.Fprintf(stdout, "%s: %d interaction(s) written to %s\n", pos[0], len(f.Interactions), pos[1])
	}
	return 0
}

// saveCassette writes f to out under the output rule.
func saveCassette(f *cassette.File, out outputFile) error {
	data, err := f.Marshal()
	if err != nil {
		return fmt.Errorf("cassette: %w", err)
	}
	return out.write(data, 0o600)
}

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }
