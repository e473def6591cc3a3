package main

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/openmax/openmax/recorder/edit"
)

// runCassetteDiff is `openmax cassette diff A B`: a review of two
// recordings, interaction by interaction. It exits 0 when they are the
// same, 1 when they differ (or a file is missing, unreadable or
// malformed: the one exit-code rule), 2 on a command-line mistake.
func runCassetteDiff(args []string, stdout, stderr io.Writer) int {
	c := command{name: "openmax cassette diff", usage: "A B [--json] [--no-timing]",
		purpose: "Review two recordings (any format cassette import reads) for a pull request: per interaction, paired by index, what changed in the request (endpoint, model, stream, user text, tools, tool results, other body members by JSON path) and in the response (status, headers, text, thinking, tool calls, finish, usage, errors, signal, end) and its timing. Exits 0 when they are the same, 1 when they differ."}
	fs := c.flags()
	asJSON := fs.Bool("json", false, "print the report as one JSON document (the schema: edit.DiffReport; docs/record-replay.md)")
	noTiming := fs.Bool("no-timing", false, "leave the timing (start, chunk arrivals, end) out of the comparison")
	pos, code, ok := c.parse(fs, args, stdout, stderr)
	if !ok {
		return code
	}
	if len(pos) != 2 {
		return c.usageError(stderr, "give two recordings, A and B")
	}
	a, err := loadCassette(pos[0], c.name, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", c.name, err)
		return 1
	}
	b, err := loadCassette(pos[1], c.name, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", c.name, err)
		return 1
	}
	r := edit.Diff(pos[0], a, pos[1], b, edit.DiffOptions{NoTiming: *noTiming})
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		err = enc.Encode(r)
	} else {
		err = edit.WriteDiff(stdout, r)
	}
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", c.name, err)
		return 1
	}
	if !r.Same {
		return 1
	}
	return 0
}
