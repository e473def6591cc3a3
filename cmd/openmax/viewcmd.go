package main

import (
	"bytes"
	"fmt"
	"io"
	"os"

	"github.com/openmax/openmax/core/wire/view"
	"github.com/openmax/openmax/internal/report"
)

var viewCommand = command{
	name:    "openmax view",
	usage:   "[FILE|-] [--stdin FILE] [--virtual] [--color auto|always|never]",
	purpose: "Show an openmax stdout transcript (JSONL, from a file or stdin) for people: prompts, text, tools, retries, errors, stop reasons and a summary.",
}

// runView is `openmax view`.
func runView(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	c := viewCommand
	fs := c.flags()
	input := fs.String("stdin", "", "the client's stdin (JSONL commands), to show each turn's prompt")
	virtual := fs.Bool("virtual", false, "mark retry waits as virtual (a replay's transcript)")
	color := fs.String("color", "auto", "colour: auto (when stdout is a terminal and NO_COLOR is unset), always or never")
	pos, code, ok := c.parse(fs, args, stdout, stderr)
	if !ok {
		return code
	}
	if len(pos) > 1 {
		return c.usageError(stderr, "want at most one transcript, got %d", len(pos))
	}
	opts := view.Options{Virtual: *virtual}
	var err error
	if opts.Color, err = colorFor(*color, stdout); err != nil {
		return c.usageError(stderr, "%v", err)
	}
	in := stdin
	if len(pos) == 1 && pos[0] != "-" {
		f, err := os.Open(pos[0])
		if err != nil {
			fmt.Fprintf(stderr, "openmax view: %v\n", err)
			return 1
		}
		defer f.Close()
		in = f
	}
	if *input != "" {
		f, err := os.Open(*input)
		if err != nil {
			fmt.Fprintf(stderr, "openmax view: %v\n", err)
			return 1
		}
		defer f.Close()
		opts.Stdin = f
	}
	if _, err := view.Render(stdout, in, opts); err != nil {
		fmt.Fprintf(stderr, "openmax view: %v\n", err)
		return 1
	}
	return 0
}

// colorFor decides a --color mode for out: auto colours a terminal only.
func colorFor(mode string, out io.Writer) (bool, error) {
	switch mode {
	case "always":
		return true, nil
	case "never":
		return false, nil
	case "auto":
		f, ok := out.(*os.File)
		return ok && view.IsTerminal(f), nil
	}
	return false, fmt.Errorf("--color must be auto, always or never, got %q", mode)
}

// writeReports writes the machine reports of `replay DIR`; "-" is stdout.
// An existing report file is replaced only with overwrite.
func writeReports(rows []report.Row, junitPath, jsonPath string, overwrite bool, suite string, stdout io.Writer) error {
	write := func(path string, fn func(io.Writer) error) error {
		if path == "" {
			return nil
		}
		if path == "-" {
			return fn(stdout)
		}
		var b bytes.Buffer
		if err := fn(&b); err != nil {
			return err
		}
		if err := (outputFile{path: path, overwrite: overwrite}).write(b.Bytes(), 0o644); err != nil {
			return fmt.Errorf("writing the report: %w", err)
		}
		return nil
	}
	if err := write(junitPath, func(w io.Writer) error { return report.JUnit(w, suite, rows) }); err != nil {
		return err
	}
	return write(jsonPath, func(w io.Writer) error { return report.JSON(w, rows) })
}
