package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"

	"github.com/openmax/openmax/internal/report"
)

var reportMergeCommand = command{
	name:  "openmax report merge",
	usage: "REPORT... [--junit FILE] [--json FILE] [--suite NAME] [--overwrite]",
	purpose: "Join the reports of a split run's shards (openmax replay DIR --shard K/N --junit/--json) into the one the unsharded run writes: " +
		"every testcase once, in the unsharded order, the counts recomputed. JUnit reports merge into JUnit; JSON reports into JSON or JUnit. " +
		"Exit 1 when the merged run has a failure or the shards overlap.",
}

// `openmax report merge` is a subcommand of `openmax report`.
func init() {
	reportSubcommands["merge"] = func(_ context.Context, args []string, stdout, stderr io.Writer, _ env) int {
		return runReportMerge(args, stdout, stderr)
	}
}

// runReportMerge is `openmax report merge`.
func runReportMerge(args []string, stdout, stderr io.Writer) int {
	c := reportMergeCommand
	fs := c.flags()
	junitOut := fs.String("junit", "", "write the merged JUnit XML to this file (- for stdout); the default when the inputs are JUnit and no --json is given")
	jsonOut := fs.String("json", "", "write the merged JSON report to this file (- for stdout; JSON inputs only); the default when the inputs are JSON and no --junit is given")
	suite := fs.String("suite", "", "the JUnit suite's name when the shards do not share one (JSON inputs carry none; default \""+report.DefaultSuite+"\")")
	overwrite := fs.Bool("overwrite", false, "replace an existing --junit or --json file")
	pos, code, ok := c.parse(fs, args, stdout, stderr)
	if !ok {
		return code
	}
	if len(pos) == 0 {
		return c.usageError(stderr, "want the shards' reports")
	}
	if *junitOut == "-" && *jsonOut == "-" {
		return c.usageError(stderr, "--junit and --json cannot both go to stdout")
	}
	for _, out := range []string{*junitOut, *jsonOut} {
		if out == "" || out == "-" {
			continue
		}
		if err := (outputFile{path: out, overwrite: *overwrite}).check(pos...); err != nil {
			return c.usageError(stderr, "%v", err)
		}
	}
	var ins []report.Input
	xmlIn := 0
	for _, p := range pos {
		data, err := os.ReadFile(p)
		if err != nil {
			fmt.Fprintf(stderr, "%s: %v\n", c.name, err)
			return 1
		}
		if report.IsJUnit(data) {
			xmlIn++
		}
		ins = append(ins, report.Input{Name: p, Data: data})
	}
	if xmlIn != 0 && xmlIn != len(ins) {
		return c.usageError(stderr, "the reports mix JUnit and JSON; merge one kind")
	}
	if xmlIn > 0 && *jsonOut != "" {
		return c.usageError(stderr, "--json needs JSON reports (openmax replay DIR --json); these are JUnit")
	}
	if *junitOut == "" && *jsonOut == "" {
		if xmlIn > 0 {
			*junitOut = "-"
		} else {
			*jsonOut = "-"
		}
	}
	var failed, total int
	if xmlIn > 0 {
		var b bytes.Buffer
		passed, f, err := report.MergeJUnit(&b, *suite, ins)
		if err != nil {
			fmt.Fprintf(stderr, "%s: %v\n", c.name, err)
			return 1
		}
		failed, total = f, passed+f
		if err := writeReportBytes(*junitOut, b.Bytes(), *overwrite, stdout); err != nil {
			fmt.Fprintf(stderr, "%s: %v\n", c.name, err)
			return 1
		}
	} else {
		rows, err := report.MergeJSON(ins)
		if err != nil {
			fmt.Fprintf(stderr, "%s: %v\n", c.name, err)
			return 1
		}
		_, failed, _ = report.Counts(rows)
		total = len(rows)
		if err := writeReports(rows, *junitOut, *jsonOut, *overwrite, *suite, stdout); err != nil {
			fmt.Fprintf(stderr, "%s: %v\n", c.name, err)
			return 1
		}
	}
	fmt.Fprintf(stderr, "%s: %d report(s), %d passed, %d failed\n", c.name, len(ins), total-failed, failed)
	if failed > 0 {
		return 1
	}
	return 0
}

// writeReportBytes writes a finished report to path ("-" is stdout).
func writeReportBytes(path string, data []byte, overwrite bool, stdout io.Writer) error {
	if path == "-" {
		_, err := stdout.Write(data)
		return err
	}
	if err := (outputFile{path: path, overwrite: overwrite}).write(data, 0o644); err != nil {
		return fmt.Errorf("writing the report: %w", err)
	}
	return nil
}
