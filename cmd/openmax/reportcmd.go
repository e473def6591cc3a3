package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/openmax/openmax/recorder/replay"
	"github.com/openmax/openmax/replay/report"
	"github.com/openmax/openmax/replay/sweep"
)

// reportSubcommands are the words after `openmax report` that name a
// command of their own (`openmax report merge ...` registers itself here
// from its file); any other first argument is the cassette or folder to
// report on.
var reportSubcommands = map[string]func(ctx context.Context, args []string, stdout, stderr io.Writer, e env) int{}

var reportCommand = command{
	name:  "openmax report",
	usage: "CASSETTE|DIR [--sweep [--max-variants N]] --html OUTDIR [--golden DIR] [--overwrite]",
	purpose: "Write a static HTML report (and OUTDIR/report.json) of recorded cassettes replayed through the engine: per turn, each interaction's timeline " +
		"(chunk arrivals, TTFT, the longest gap, stalls, resets, truncation, Retry-After waits) beside the transcript; for a folder, the pass/fail table " +
		"against the golden files; with --sweep, the matrix of injected faults. The pages load nothing: open OUTDIR/index.html from disk. " +
		"(`openmax report merge REPORT...` joins the JUnit or JSON reports of a sharded run; see its --help.)",
}

// runReport is `openmax report`.
func runReport(ctx context.Context, args []string, stdout, stderr io.Writer, e env) int {
	if len(args) > 0 {
		if sub, ok := reportSubcommands[args[0]]; ok {
			return sub(ctx, args[1:], stdout, stderr, e)
		}
	}
	c := reportCommand
	fs := c.flags()
	htmlDir := fs.String("html", "", "the folder to write the report into (created; its index.html is the start page)")
	doSweep := fs.Bool("sweep", false, "also replay every single injected fault at every place of each cassette (as openmax cassette sweep) and show the matrix")
	maxVariants := fs.Int("max-variants", sweep.DefaultMaxVariants, "with --sweep: the most variants per cassette; 0 for all")
	goldenDir := fs.String("golden", "", "for a folder: its golden files (default DIR/../golden/<DIR's name>, as openmax replay DIR)")
	overwrite := fs.Bool("overwrite", false, "write into an OUTDIR that already holds files")
	ignore := addMatchFlags(fs)
	pos, code, ok := c.parse(fs, args, stdout, stderr)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		return c.usageError(stderr, "want one cassette or directory, got %d arguments", len(pos))
	}
	if *htmlDir == "" {
		return c.usageError(stderr, "--html OUTDIR is required")
	}
	if *maxVariants < 0 {
		return c.usageError(stderr, "--max-variants must not be negative")
	}
	if err := checkReportDir(*htmlDir, pos[0], *overwrite); err != nil {
		return c.usageError(stderr, "%v", err)
	}
	o := report.Options{Golden: *goldenDir, Log: stderr}
	ignore.apply(&o.Serving)
	if *doSweep {
		o.Sweep = sweepReplayer(e)
		o.SweepOptions = sweep.Options{MaxVariants: *maxVariants}
	}
	o.Serving.Pace = replay.Pace{Mode: replay.PaceInstant}
	start := time.Now()
	site, err := report.Build(ctx, pos[0], o)
	if err != nil {
		fmt.Fprintf(stderr, "openmax report: %v\n", err)
		return 1
	}
	if err := site.Write(*htmlDir); err != nil {
		fmt.Fprintf(stderr, "openmax report: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "%s\n", filepath.Join(*htmlDir, "index.html"))
	fmt.Fprintf(stderr, "openmax report: %d cassette(s) in %s\n", len(site.Cassettes), time.Since(start).Round(time.Millisecond))
	return 0
}

// checkReportDir refuses an OUTDIR that is the input, or that already
// holds files unless overwrite.
func checkReportDir(dir, input string, overwrite bool) error {
	st, err := os.Stat(dir)
	if err != nil {
		return nil // created when written
	}
	if !st.IsDir() {
		return fmt.Errorf("--html %s is a file, not a folder", dir)
	}
	if ist, err := os.Stat(input); err == nil && os.SameFile(st, ist) {
		return fmt.Errorf("--html %s is the folder of cassettes; write the report elsewhere", dir)
	}
	if entries, _ := os.ReadDir(dir); len(entries) > 0 && !overwrite {
		return fmt.Errorf("--html %s already holds files (write to a new folder, or pass --overwrite)", dir)
	}
	return nil
}
