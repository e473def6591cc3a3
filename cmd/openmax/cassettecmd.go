package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/openmax/openmax/recorder/edit"
	"github.com/openmax/openmax/recorder/importer"
)

// runCassette is `openmax cassette show|inject|import`.
func runCassette(args []string, stdout, stderr io.Writer) int {
	usage := func() int {
		fmt.Fprint(stderr, `usage:
  openmax cassette show FILE                                  a readable timeline of a cassette
  openmax cassette inject FILE OUT --op SPEC [--op SPEC ...]  write a copy of FILE with faults injected
  openmax cassette import [--from auto|`+strings.Join(importer.Formats(), "|")+`] IN OUT
                                                              convert another tool's recording
`)
		return 2
	}
	if len(args) == 0 {
		return usage()
	}
	fs := flag.NewFlagSet("openmax cassette "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	var ops multiFlag
	from := "auto"
	switch args[0] {
	case "inject":
		fs.Var(&ops, "op", "a fault: 429@N[:retry-after=S], 5xx codes like 503@N, truncate@N:chunk=K, reset@N:byte=B, stream-error@N:chunk=K")
	case "import":
		fs.StringVar(&from, "from", "auto", "the recording's format: auto, "+strings.Join(importer.Formats(), ", "))
	case "show":
	case "sweep":
		return runSweepCmd(args[1:], stdout, stderr)
	default:
		return usage()
	}
	pos, err := parseInterleaved(fs, args[1:])
	if err != nil {
		return 2
	}
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
		if err := f.Save(pos[1]); err != nil {
			fmt.Fprintf(stderr, "openmax cassette inject: %v\n", err)
			return 1
		}
	case "import":
		if len(pos) != 2 {
			return usage()
		}
		data, err := os.ReadFile(pos[0])
		if err != nil {
			fmt.Fprintf(stderr, "openmax cassette import: %v\n", err)
			return 1
		}
		f, err := importer.Import(from, data)
		if err != nil {
			code := 1
			if errors.Is(err, importer.ErrUnknownFormat) {
				code = 2
			}
			fmt.Fprintf(stderr, "openmax cassette import: %s: %v\n", pos[0], err)
			return code
		}
		if s, err := importer.Session(f); err == nil {
			f.Session = s
		} else {
			fmt.Fprintf(stderr, "openmax cassette import: no session made up (%v); replay it with fake-provider --cassette\n", err)
		}
		if err := f.Save(pos[1]); err != nil {
			fmt.Fprintf(stderr, "openmax cassette import: %v\n", err)
			return 1
		}
		fmt.Fprintf(stdout, "%s: %d interaction(s) written to %s\n", pos[0], len(f.Interactions), pos[1])
	}
	return 0
}

// parseInterleaved parses flags that may come before, between or after
// the positional arguments, which it returns.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		pos, args = append(pos, args[0]), args[1:]
	}
}

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }
