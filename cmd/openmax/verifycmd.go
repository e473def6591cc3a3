package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/openmax/openmax/recorder/drift"
)

// runVerifyCmd is `openmax cassette verify --live FILE`, on the process's
// environment and signals.
func runVerifyCmd(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return runVerify(ctx, args, stdout, stderr, os.Getenv)
}

// runVerify re-sends a cassette's recorded requests to a live endpoint and
// reports the drift of the wire's shape (recorder/drift): exit 0 when
// every reply kept its shape, 1 on drift or when a request could not be
// checked, 2 on a usage error.
func runVerify(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	c := command{name: "openmax cassette verify", usage: "--live FILE [--base-url URL] [--timeout D] [--json]",
		purpose: "Send a cassette's recorded requests again to a live endpoint (the key from the environment) and report how the wire's shape drifted: status, headers that steer clients, event types, JSON fields, finish reasons, failures; words never count. Exit 1 on drift."}
	fs := c.flags()
	live := fs.Bool("live", false, "send the requests to a live endpoint (required: verify has no offline mode)")
	base := fs.String("base-url", "", "scheme://host[:port][/prefix] the recorded paths are sent to (default: each recorded URL as it is)")
	timeout := fs.Duration("timeout", 2*time.Minute, "the longest one request and its reply may take")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	pos, code, ok := c.parse(fs, args, stdout, stderr)
	if !ok {
		return code
	}
	if !*live {
		return c.usageError(stderr, "--live is required: verify sends the recorded requests to a live endpoint")
	}
	if len(pos) != 1 {
		return c.usageError(stderr, "want one cassette, got %d arguments", len(pos))
	}
	if *timeout <= 0 {
		return c.usageError(stderr, "--timeout must be positive")
	}
	f, err := loadCassette(pos[0], c.name, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", c.name, err)
		return 1
	}
	rep, err := drift.Check(ctx, f, drift.Options{BaseURL: *base, Getenv: getenv, Timeout: *timeout})
	if err != nil && rep == nil {
		return c.usageError(stderr, "%v", err)
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if werr := enc.Encode(rep); werr != nil {
			fmt.Fprintf(stderr, "%s: %v\n", c.name, werr)
			return 1
		}
	} else {
		for _, it := range rep.Interactions {
			verdict := "same shape"
			switch {
			case it.Skipped != "":
				verdict = "not sent: " + it.Skipped
			case len(it.Drift) > 0:
				verdict = fmt.Sprintf("drift (%d)", len(it.Drift))
			}
			fmt.Fprintf(stdout, "#%d %s %s [%s]: %s\n", it.Index, it.Method, it.Path, it.Wire, verdict)
			for _, ch := range it.Drift {
				fmt.Fprintf(stdout, "  %s\n", ch)
			}
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", c.name, err)
		return 1
	}
	fmt.Fprintf(stderr, "%s: %d interaction(s): %d drifted, %d not sent, %d kept their shape\n", c.name,
		len(rep.Interactions), rep.Drifted, rep.Skipped, len(rep.Interactions)-rep.Drifted-rep.Skipped)
	if rep.Drifted > 0 || rep.Skipped > 0 {
		return 1
	}
	return 0
}
