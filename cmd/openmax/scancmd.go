package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"sync"
	"time"

	"github.com/openmax/openmax/recorder/scan"
)

// scanReport is `openmax cassette scan --json`'s output.
type scanReport struct {
	Files    int            `json:"files"`
	Bytes    int64          `json:"bytes"`
	Findings []scan.Finding `json:"findings"`
	Problems []scan.Problem `json:"problems"`
}

// runScan is `openmax cassette scan [--allow FILE] [--json] FILE|DIR...`:
// the secrets a scrubber missed, one line each on stdout (file:line, the
// rule, where, the secret redacted and its fingerprint), or one JSON
// document with --json. What it could not read goes to stderr, with a
// summary. Exit 0 when clean, 1 on a finding or on a file it could not
// vouch for, 2 on a usage error.
func runScan(args []string, stdout, stderr io.Writer) int {
	c := command{name: "openmax cassette scan", usage: "[--allow FILE] [--json] FILE|DIR...",
		purpose: "Find secrets a scrubber missed in recordings (key formats, bearer tokens, cookies, JWTs, private keys, secret headers and query values, high-entropy tokens); exit 1 on any. A directory is walked for " + fmt.Sprint(scan.WalkExts) + "."}
	fs := c.flags()
	var allows multiFlag
	fs.Var(&allows, "allow", "an allowlist of known fakes (lines RULE:FINGERPRINT, value:TEXT, re:REGEXP, rule:RULE); repeatable; without it, "+scan.DefaultAllowFile+" in the working directory or a parent up to the repository root")
	asJSON := fs.Bool("json", false, "print one JSON document (files, bytes, findings, problems) instead of lines")
	pos, code, ok := c.parse(fs, args, stdout, stderr)
	if !ok {
		return code
	}
	if len(pos) == 0 {
		return c.usageError(stderr, "want at least one file or directory")
	}
	start := time.Now()
	if len(allows) == 0 {
		if wd, err := os.Getwd(); err == nil {
			if p := scan.FindDefaultAllow(wd); p != "" {
				allows = append(allows, p)
			}
		}
	}
	var lists []*scan.Allowlist
	for _, p := range allows {
		a, err := scan.ReadAllowlist(p)
		if err != nil {
			fmt.Fprintf(stderr, "openmax cassette scan: %v\n", err)
			return 1
		}
		lists = append(lists, a)
	}
	opt := scan.Options{Allow: scan.Merge(lists...)}
	files, errs := scan.Files(pos)
	failed := len(errs) > 0
	for _, err := range errs {
		fmt.Fprintf(stderr, "openmax cassette scan: %v\n", err)
	}
	rep := scanReport{Findings: []scan.Finding{}, Problems: []scan.Problem{}}
	results := scanAll(files, opt)
	for _, r := range results {
		res, err := r.res, r.err
		if err != nil {
			fmt.Fprintf(stderr, "openmax cassette scan: %v\n", err)
			failed = true
			continue
		}
		rep.Files++
		rep.Bytes += res.Bytes
		rep.Findings = append(rep.Findings, res.Findings...)
		rep.Problems = append(rep.Problems, res.Problems...)
		if !*asJSON {
			for _, fd := range res.Findings {
				fmt.Fprintln(stdout, fd)
			}
		}
		for _, p := range res.Problems {
			fmt.Fprintf(stderr, "openmax cassette scan: %s\n", p)
		}
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			fmt.Fprintf(stderr, "openmax cassette scan: %v\n", err)
			return 1
		}
	}
	elapsed := time.Since(start)
	fmt.Fprintf(stderr, "openmax cassette scan: %d file(s), %.1f MB, %d finding(s), %d problem(s), %s\n",
		rep.Files, float64(rep.Bytes)/1e6, len(rep.Findings), len(rep.Problems), elapsed.Round(time.Millisecond))
	if failed || len(rep.Findings) > 0 || len(rep.Problems) > 0 {
		return 1
	}
	return 0
}

type scanResult struct {
	res scan.Result
	err error
}

// scanAll scans files on GOMAXPROCS goroutines and returns the results
// in the files' order, so the output is the same every run.
func scanAll(files []string, opt scan.Options) []scanResult {
	out := make([]scanResult, len(files))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(files)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				out[i].res, out[i].err = scan.File(files[i], opt)
			}
		}()
	}
	for i := range files {
		next <- i
	}
	close(next)
	wg.Wait()
	return out
}
