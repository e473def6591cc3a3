package main

import (
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"

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

// runToScript is `openmax cassette to-script FILE [OUT]`: the recording
// as a fake-provider scenario, on stdout or in OUT (the output rule: OUT
// is never FILE, and an existing OUT is replaced only with --overwrite).
func runToScript(args []string, stdout, stderr io.Writer) int {
	c := command{name: "openmax cassette to-script", usage: "FILE [OUT] [--overwrite] [--no-delays]",
		purpose: "Turn a recording (any format cassette import reads) into a fake-provider scenario (docs/scripts.md), one reply per interaction: text, thinking and signatures, tool calls, usage, finish, in-stream errors, the chunk timings as delays, status and headers, error bodies verbatim, resets, stalls and refusals where recorded. Serve it with openmax fake-provider --scenario; edit it to change a real answer."}
	fs := c.flags()
	overwrite := fs.Bool("overwrite", false, "replace OUT if it exists (without it, an existing file is refused and left as it is; OUT is never the input)")
	noDelays := fs.Bool("no-delays", false, "leave out the delays that reproduce when the recorded chunks arrived")
	pos, code, ok := c.parse(fs, args, stdout, stderr)
	if !ok {
		return code
	}
	if len(pos) != 1 && len(pos) != 2 {
		return c.usageError(stderr, "give the recording, and optionally OUT")
	}
	var out *outputFile
	if len(pos) == 2 {
		out = &outputFile{path: pos[1], overwrite: *overwrite}
		if err := out.check(pos[0]); err != nil {
			return c.usageError(stderr, "%v", err)
		}
	}
	f, err := loadCassette(pos[0], c.name, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", c.name, err)
		return 1
	}
	sc, notes, err := edit.ToScript(f, edit.ScriptOptions{NoDelays: *noDelays})
	if err == nil {
		var data []byte
		head := []string{fmt.Sprintf("openmax cassette to-script %s: one reply per recorded interaction (%d)", filepath.Base(pos[0]), len(sc.Replies))}
		if data, err = edit.MarshalScript(sc, head, notes); err == nil {
			for _, n := range notes {
				fmt.Fprintf(stderr, "%s: %s: %s\n", c.name, pos[0], n)
			}
			if out != nil {
				err = out.write(data, 0o644)
			} else {
				_, err = stdout.Write(data)
			}
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "%s: %s: %v\n", c.name, pos[0], err)
		return 1
	}
	return 0
}
