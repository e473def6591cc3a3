package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"strings"
	"sync"

	"github.com/openmax/openmax/provider/fake"
	"github.com/openmax/openmax/provider/script"
	"github.com/openmax/openmax/recorder"
	"github.com/openmax/openmax/recorder/replay"
)

// runFakeProvider serves a scenario as a fake vendor API (every registered
// wire: provider/fake) until ctx ends (SIGINT/SIGTERM), printing its base
// URL as the first stdout line.
func runFakeProvider(ctx context.Context, args []string, stdout, stderr io.Writer, e env) int {
	c := command{name: "openmax fake-provider", usage: "--scenario FILE | --cassette FILE [--pace P] [--ignore PATH] [--addr HOST:PORT]",
		purpose: "Serve a scripted fake vendor API (every wire openmax speaks), or a recorded cassette, over HTTP on loopback; prints its base URL on stdout."}
	fs := c.flags()
	scenario := fs.String("scenario", "", "the scenario file (YAML) scripting each response in order")
	cassettePath := fs.String("cassette", "", "serve a recorded cassette instead, with its recorded pacing and faults")
	paceFlag := fs.String("pace", "recorded", "with --cassette: instant, recorded, or xN")
	missDiff := fs.Bool("miss-diff", false, "with --cassette: after each MISS line, print the diff against the nearest recorded request")
	match := addMatchFlags(fs)
	addr := fs.String("addr", "127.0.0.1:0", "the address to listen on")
	pos, code, ok := c.parse(fs, args, stdout, stderr)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		return c.usageError(stderr, "unexpected argument %q", pos[0])
	}
	if (*scenario == "") == (*cassettePath == "") {
		return c.usageError(stderr, "give --scenario FILE or --cassette FILE (one of them)")
	}
	if _, err := replay.ParsePace(*paceFlag); err != nil {
		return c.usageError(stderr, "%v", err)
	}
	if *cassettePath != "" {
		return serveCassette(ctx, cassetteServing{path: *cassettePath, pace: *paceFlag, addr: *addr, match: match, missDiff: *missDiff}, stdout, stderr, e)
	}
	sc, err := script.Load(*scenario)
	if err != nil {
		fmt.Fprintf(stderr, "openmax fake-provider: %v\n", err)
		return 1
	}
	srv := fake.New(sc, fake.Options{Clock: e.clock})
	base, err := srv.Start(*addr)
	if err != nil {
		fmt.Fprintf(stderr, "openmax fake-provider: %v\n", err)
		return 1
	}
	fmt.Fprintln(stdout, base)
	<-ctx.Done()
	if err := srv.Close(); err != nil {
		fmt.Fprintf(stderr, "openmax fake-provider: %v\n", err)
		return 1
	}
	return 0
}

// cassetteServing is what `fake-provider --cassette` was asked to do.
type cassetteServing struct {
	path, pace, addr string
	match            *matchFlags
	missDiff         bool
}

// serveCassette serves a recording over HTTP with its pacing and faults,
// so any process can be tested against it. Each request gets one line on
// stderr (served interaction N, or MISS with the nearest interaction and
// what differs); when ctx ends a summary line names the interactions never
// requested. It exits 1 when any request missed.
func serveCassette(ctx context.Context, c cassetteServing, stdout, stderr io.Writer, e env) int {
	f, err := loadCassette(c.path, "openmax fake-provider", stderr)
	if err != nil {
		fmt.Fprintf(stderr, "openmax fake-provider: %v\n", err)
		return 1
	}
	pace, err := replay.ParsePace(c.pace)
	if err != nil {
		fmt.Fprintf(stderr, "openmax fake-provider: %v\n", err)
		return 2
	}
	l, err := net.Listen("tcp", c.addr)
	if err != nil {
		fmt.Fprintf(stderr, "openmax fake-provider: %v\n", err)
		return 1
	}
	var logMu sync.Mutex
	opts := replay.Options{Clock: e.clock, Pace: pace, Scrub: recorder.ScrubFunc(nil), OnRequest: func(ev replay.Event) {
		logMu.Lock()
		defer logMu.Unlock()
		fmt.Fprintf(stderr, "openmax fake-provider: %s\n", ev)
		if c.missDiff && ev.Miss != nil && ev.Miss.Diff != "" {
			for _, line := range strings.Split(strings.TrimRight(ev.Miss.Diff, "\n"), "\n") {
				fmt.Fprintf(stderr, "    %s\n", line)
			}
		}
	}}
	c.match.apply(&opts)
	h := replay.NewHandler(f, opts).(*replay.Handler)
	srv := &http.Server{Handler: h, ErrorLog: log.New(io.Discard, "", 0)}
	go srv.Serve(l) //nolint:errcheck // returns ErrServerClosed on Close
	fmt.Fprintf(stdout, "http://%s\n", l.Addr())
	<-ctx.Done()
	srv.Close()
	logMu.Lock()
	defer logMu.Unlock()
	fmt.Fprintf(stderr, "openmax fake-provider: %s: %s\n", c.path, h.Summary())
	if len(h.Misses()) > 0 {
		return 1
	}
	return 0
}
