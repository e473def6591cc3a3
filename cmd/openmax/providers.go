package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"github.com/openmax/openmax/provider/fake"
	"github.com/openmax/openmax/provider/script"
	"github.com/openmax/openmax/recorder"
	"github.com/openmax/openmax/recorder/cassette"
	"github.com/openmax/openmax/recorder/mode"
	"github.com/openmax/openmax/recorder/replay"
)

// runFakeProvider serves a scenario as a fake vendor API (every registered
// wire: provider/fake) until ctx ends (SIGINT/SIGTERM), printing its base
// URL as the first stdout line.
func runFakeProvider(ctx context.Context, args []string, stdout, stderr io.Writer, e env) int {
	c := command{name: "openmax fake-provider", usage: "--scenario FILE | --cassette FILE [--mode " + mode.Names() + " [--upstream URL]] [--pace P] [--ignore PATH] [--addr HOST:PORT]",
		purpose: "Serve a scripted fake vendor API (every wire openmax speaks), or a recorded cassette, over HTTP on loopback; prints its base URL on stdout."}
	fs := c.flags()
	scenario := fs.String("scenario", "", "the scenario file (YAML) scripting each response in order")
	cassettePath := fs.String("cassette", "", "serve a recorded cassette instead, with its recorded pacing and faults")
	paceFlag := fs.String("pace", "recorded", "with --cassette: instant, recorded, or xN")
	missDiff := fs.Bool("miss-diff", false, "with --cassette: after each MISS line, print the diff against the nearest recorded request")
	match := addMatchFlags(fs)
	addr := fs.String("addr", "127.0.0.1:0", "the address to listen on")
	modeF := addModeFlag(fs)
	upstream := fs.String("upstream", "", "with --cassette and a mode that records (once on a missing cassette, missing, refresh): the API the requests to record are forwarded to, such as https://api.openai.com")
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
		m, why, err := mode.Resolve(modeF.m, e.env)
		if err != nil {
			return c.usageError(stderr, "%v", err)
		}
		cs := cassetteServing{path: *cassettePath, pace: *paceFlag, addr: *addr, match: match, missDiff: *missDiff, mode: m}
		if m.Records(exists(*cassettePath)) {
			if *upstream == "" {
				fmt.Fprintf(stderr, "openmax fake-provider: mode %s (%s) records %s, which needs --upstream URL (the API to forward to)\n", m, why, *cassettePath)
				if modeF.m != "" {
					return 2
				}
				return 1
			}
			up, err := url.Parse(*upstream)
			if err != nil || (up.Scheme != "http" && up.Scheme != "https") || up.Host == "" {
				return c.usageError(stderr, "--upstream must be an absolute http(s) URL, got %q", *upstream)
			}
			cs.upstream = up
		} else if *upstream != "" {
			return c.usageError(stderr, "--upstream is where a recording mode forwards requests; mode %s on %s only replays", m, *cassettePath)
		}
		if cs.upstream != nil && (m != mode.Missing || !exists(*cassettePath)) {
			return recordProxy(ctx, cs, stdout, stderr, e)
		}
		return serveCassette(ctx, cs, stdout, stderr, e)
	}
	if modeF.m != "" || *upstream != "" {
		return c.usageError(stderr, "--mode and --upstream go with --cassette")
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
	mode             mode.Mode
	upstream         *url.URL // set when the mode records
}

// recordProxy is fake-provider --cassette under a mode that records every
// request (refresh, or once and missing on a cassette that does not exist
// yet): a recording reverse proxy in front of the upstream, as record
// --proxy, writing the cassette (replacing it under refresh).
func recordProxy(ctx context.Context, c cassetteServing, stdout, stderr io.Writer, e env) int {
	l, err := net.Listen("tcp", c.addr)
	if err != nil {
		fmt.Fprintf(stderr, "openmax fake-provider: %v\n", err)
		return 1
	}
	defer l.Close()
	rec, err := recorder.New(recorder.Options{Path: c.path, Transport: e.transport, Clock: e.clock, Overwrite: c.mode == mode.Refresh})
	if err != nil {
		fmt.Fprintf(stderr, "openmax fake-provider: %v\n", err)
		return 1
	}
	srv := &http.Server{Handler: recorder.NewProxy(c.upstream, rec), ErrorLog: log.New(io.Discard, "", 0)}
	go srv.Serve(l) //nolint:errcheck // returns ErrServerClosed on Close
	fmt.Fprintf(stdout, "http://%s\n", l.Addr())
	<-ctx.Done()
	srv.Close()
	n := rec.Recorded()
	if err := rec.Close(); err != nil {
		fmt.Fprintf(stderr, "openmax fake-provider: %v\n", err)
		return 1
	}
	fmt.Fprintf(stderr, "openmax fake-provider: mode %s: %s: recorded %d interaction(s) from %s\n", c.mode, c.path, n, c.upstream)
	return 0
}

// serveCassette serves a recording over HTTP with its pacing and faults,
// so any process can be tested against it. Each request gets one line on
// stderr (served interaction N, or MISS with the nearest interaction and
// what differs); when ctx ends a summary line names the interactions never
// requested. It exits 1 when any request missed.
func serveCassette(ctx context.Context, c cassetteServing, stdout, stderr io.Writer, e env) int {
	var (
		f     *cassette.File
		items []cassette.Item // mode missing: what the new cassette keeps
		err   error
	)
	if c.upstream != nil {
		f, items, err = loadItems(c.path, "openmax fake-provider", stderr)
	} else {
		f, err = loadCassette(c.path, "openmax fake-provider", stderr)
	}
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
	var (
		recMu sync.Mutex
		rec   *recorder.Recorder
		recN  int
	)
	if c.upstream != nil {
		// Mode missing: what the cassette lacks goes upstream, recorded
		// after the interactions the cassette had (kept byte for byte);
		// the file is not touched until then.
		opts.Fallback = func(req *http.Request, _ *replay.MissError) (*http.Response, error) {
			recMu.Lock()
			if rec == nil {
				r, err := recorder.New(recorder.Options{Path: c.path, Overwrite: true, Keep: items, Clock: e.clock,
					Transport: upstreamTransport(c.upstream, e.transport)})
				if err != nil {
					recMu.Unlock()
					return nil, err
				}
				if f.Session != nil {
					r.StageSession(f.Session)
				}
				rec = r
			}
			recN++
			r := rec
			recMu.Unlock()
			return r.RoundTrip(req)
		}
	}
	h := replay.NewHandler(f, opts).(*replay.Handler)
	srv := &http.Server{Handler: h, ErrorLog: log.New(io.Discard, "", 0)}
	go srv.Serve(l) //nolint:errcheck // returns ErrServerClosed on Close
	fmt.Fprintf(stdout, "http://%s\n", l.Addr())
	<-ctx.Done()
	srv.Close()
	logMu.Lock()
	defer logMu.Unlock()
	fmt.Fprintf(stderr, "openmax fake-provider: %s: %s\n", c.path, h.Summary())
	recMu.Lock()
	defer recMu.Unlock()
	if rec != nil {
		if err := rec.Close(); err != nil {
			fmt.Fprintf(stderr, "openmax fake-provider: %v\n", err)
			return 1
		}
		fmt.Fprintf(stderr, "openmax fake-provider: mode missing: %s: kept the %d interaction(s) it had, recorded %d new from %s\n", c.path, len(items), recN, c.upstream)
	}
	if len(h.Misses()) > 0 {
		return 1
	}
	return 0
}
