package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/openmax/openmax/core/harness"
	"github.com/openmax/openmax/provider/codec"
	"github.com/openmax/openmax/recorder"
	"github.com/openmax/openmax/recorder/cassette"
	"github.com/openmax/openmax/recorder/mode"
	"github.com/openmax/openmax/recorder/replay"
	"github.com/openmax/openmax/replay/tape"
)

// modeFlag is --mode: a record mode, parsed by package recorder/mode
// (the zero value: not given).
type modeFlag struct{ m mode.Mode }

func (f *modeFlag) String() string { return string(f.m) }

func (f *modeFlag) Set(v string) error {
	m, err := mode.Parse(v)
	if err != nil {
		return err
	}
	f.m = m
	return nil
}

// hostList is --passthrough, repeatable.
type hostList struct{ p mode.Passthrough }

func (h *hostList) String() string     { return strings.Join(h.p, ",") }
func (h *hostList) Set(v string) error { return h.p.Add(v) }

// modeUsage is the help of --mode, made from the modes' own table.
func modeUsage() string {
	return mode.Help() + "\n" + "(OPENMAX_RECORD_MODE sets it when the flag is not given)"
}

// addModeFlag registers --mode on fs.
func addModeFlag(fs *flag.FlagSet) *modeFlag {
	m := &modeFlag{}
	fs.Var(m, "mode", modeUsage())
	return m
}

// addPassthroughFlag registers --passthrough on fs.
func addPassthroughFlag(fs *flag.FlagSet) *hostList {
	h := &hostList{}
	fs.Var(h, "passthrough", "a host whose requests go to the network as they are, neither replayed nor recorded (repeatable)")
	return h
}

// exists reports whether path names something (a cassette to keep).
func exists(path string) bool {
	_, err := os.Stat(path)
	return !errors.Is(err, fs.ErrNotExist)
}

// passing sends the passthrough hosts' requests to live and every other
// to rt.
func passing(p mode.Passthrough, live, rt http.RoundTripper) http.RoundTripper {
	if len(p) == 0 {
		return rt
	}
	if live == nil {
		live = http.DefaultTransport
	}
	return roundTrip(func(req *http.Request) (*http.Response, error) {
		if req.URL != nil && p.Match(req.URL.Host) {
			return live.RoundTrip(req)
		}
		return rt.RoundTrip(req)
	})
}

type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// loadItems loads the cassette at path with the text of each of its
// interactions (cassette.Items), for a recording that keeps them.
func loadItems(path, who string, stderr io.Writer) (*cassette.File, []cassette.Item, error) {
	f, err := loadCassette(path, who, stderr)
	if err != nil {
		return nil, nil, err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	items, err := cassette.Items(data, f)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	return f, items, nil
}

// replayingEnv is e with a placeholder for every credential the
// environment lacks: a harness served from a cassette sends nothing
// anywhere, so it needs no key.
func replayingEnv(e env) env {
	get := e.env
	e.getenv = func(k string) string {
		v := get(k)
		if v == "" && (strings.HasSuffix(k, "_API_KEY") || slices.Contains(codec.CredentialEnv(), k)) {
			return tape.PlaceholderKey
		}
		return v
	}
	return e
}

// runRecordServing is `openmax record --mode replay|once` on a cassette
// that exists: the live harness on stdin and stdout, as --stdio, its
// model traffic served from the cassette and nothing written. A request
// the cassette does not hold is answered as the vendor's 400 and reported
// on stderr; the exit code is then 1.
func runRecordServing(ctx context.Context, rf recordFlags, rest []string, stdin io.Reader, stdout, stderr io.Writer, e env) int {
	o, code := recordHarnessFlags(rest, stderr)
	if o == nil {
		return code
	}
	f, err := loadCassette(rf.cassette, "openmax record", stderr)
	if err != nil {
		fmt.Fprintf(stderr, "openmax record: %v\n", err)
		return 1
	}
	ro := replay.Options{MissAsResponse: true, Scrub: recorder.ScrubFunc(rf.scrub)}
	(*matchFlags)(nil).apply(&ro)
	rp := replay.New(f, ro)
	e = replayingEnv(e)
	deps := e.deps(stderr)
	deps.Transport = passing(rf.passthrough, e.transport, rp)
	h, err := harness.New(o.cfg, deps)
	if err != nil {
		return configError(err, stderr)
	}
	code, err = h.Serve(ctx, stdin, stdout)
	if err != nil {
		fmt.Fprintf(stderr, "openmax record: %v\n", err)
		return 1
	}
	if misses := rp.Misses(); len(misses) > 0 {
		for _, m := range misses {
			fmt.Fprintf(stderr, "openmax record: mode %s: request %d is not in %s: %v\n", rf.mode, m.Request, rf.cassette, m.MissError)
		}
		return 1
	}
	return code
}

// runRecordMissing is `openmax record --mode missing` on a cassette that
// exists: the live harness, its requests served from the cassette when it
// holds them and sent live (recorded) when it does not. The cassette keeps
// every interaction it had, byte for byte, then the new ones, appended as
// each completes; the session is the one just run.
func runRecordMissing(ctx context.Context, rf recordFlags, rest []string, stdin io.Reader, stdout, stderr io.Writer, e env) int {
	o, code := recordHarnessFlags(rest, stderr)
	if o == nil {
		return code
	}
	f, items, err := loadItems(rf.cassette, "openmax record", stderr)
	if err != nil {
		fmt.Fprintf(stderr, "openmax record: %v\n", err)
		return 1
	}
	var logMu sync.Mutex
	sent := 0
	front := func(rec http.RoundTripper) http.RoundTripper {
		ro := replay.Options{Scrub: recorder.ScrubFunc(rf.scrub),
			Fallback: func(req *http.Request, miss *replay.MissError) (*http.Response, error) { return rec.RoundTrip(req) },
			OnRequest: func(ev replay.Event) {
				if !ev.Fallback {
					return
				}
				logMu.Lock()
				defer logMu.Unlock()
				sent++
				fmt.Fprintf(stderr, "openmax record: %s\n", ev)
			}}
		(*matchFlags)(nil).apply(&ro)
		return passing(rf.passthrough, e.transport, replay.New(f, ro))
	}
	code, err = tape.Record(ctx, stdin, stdout, tape.RecordOptions{
		Config: o.cfg, Deps: e.deps(stderr), Front: front,
		Cassette: recorder.Options{Path: rf.cassette, Scrub: rf.scrub, Overwrite: true, Keep: items},
	})
	if err != nil {
		fmt.Fprintf(stderr, "openmax record: %v\n", err)
		var cerr *harness.ConfigError
		if errors.As(err, &cerr) && !errors.Is(err, harness.ErrBadFile) {
			return 2
		}
		return 1
	}
	logMu.Lock()
	fmt.Fprintf(stderr, "openmax record: %s: kept the %d interaction(s) it had, recorded %d new\n", rf.cassette, len(items), sent)
	logMu.Unlock()
	return code
}

// runFromChange is `openmax record --from-change CASSETTE`: the recorded
// session replayed until the first request the cassette no longer holds
// (a prompt, tool or model changed), and live from there on; the new
// cassette keeps the interactions served before the change byte for byte,
// then the ones recorded live, and the recorded session. It is written in
// place (atomically, then appended to as each interaction completes), or
// to -o FILE, which follows the output rule (never the input, an existing
// file only with --overwrite). stderr says which request changed and how
// (the miss diff); stdout is the new session's transcript.
func runFromChange(ctx context.Context, rf recordFlags, rest []string, stdout, stderr io.Writer, e env) int {
	c := command{name: "openmax record", usage: "--from-change CASSETTE [-o FILE [--overwrite]] [--base-url URL] [--scrub REGEXP] [--passthrough HOST]"}
	baseURL := ""
	for i := 0; i < len(rest); i++ {
		name, val, hasVal := strings.Cut(strings.TrimLeft(rest[i], "-"), "=")
		if !strings.HasPrefix(rest[i], "-") || name != "base-url" {
			return c.usageError(stderr, "--from-change replays the recorded session with its recorded settings: unexpected %q (only --base-url, -o, --overwrite, --scrub and --passthrough go with it)", rest[i])
		}
		if !hasVal {
			if i+1 >= len(rest) {
				return c.usageError(stderr, "flag --base-url needs a value")
			}
			i++
			val = rest[i]
		}
		baseURL = val
	}
	if rf.cassette != "" {
		return c.usageError(stderr, "--from-change names the cassette itself; --cassette does not go with it (-o FILE writes elsewhere)")
	}
	if rf.mode != "" {
		return c.usageError(stderr, "--from-change is a mode of its own; --mode does not go with it")
	}
	in, out := rf.fromChange, rf.fromChange
	overwrite := true // in place: the cassette is replaced, atomically
	if rf.output != "" {
		if err := (outputFile{path: rf.output, overwrite: rf.overwrite}).check(in); err != nil {
			return c.usageError(stderr, "%v", err)
		}
		out, overwrite = rf.output, rf.overwrite
	}
	f, items, err := loadItems(in, "openmax record", stderr)
	if err != nil {
		fmt.Fprintf(stderr, "openmax record: %v\n", err)
		return 1
	}
	so := replay.Options{}
	(*matchFlags)(nil).apply(&so)
	r, err := tape.Replay(ctx, f, tape.ReplayOptions{Serving: so, Log: stderr, Live: &tape.Live{
		Policy: tape.FromChange, Items: items, BaseURL: baseURL, Getenv: e.env, Passthrough: rf.passthrough,
		Cassette: recorder.Options{Path: out, Overwrite: overwrite, Scrub: rf.scrub, Transport: e.transport, Clock: e.clock},
	}})
	if errors.Is(err, tape.ErrNoSession) {
		err = fmt.Errorf("%w\n%s", err, tape.NoSessionNextStep(in))
	}
	if err != nil {
		fmt.Fprintf(stderr, "openmax record: %s: %v\n", in, err)
		return 1
	}
	lr := r.Live
	if lr.Changed == nil {
		fmt.Fprintf(stderr, "openmax record: %s: every request matched the recording; nothing changed, nothing written\n", in)
	} else {
		fmt.Fprintf(stderr, "openmax record: request %d changed: %v\n", lr.Changed.Request, lr.Changed.MissError)
		fmt.Fprintf(stderr, "openmax record: kept %d interaction(s) byte for byte%s, recorded %d live; wrote %s\n", len(lr.Kept), indexList(lr.Kept), lr.Sent, out)
	}
	return liveResult(r, "openmax record", in, stdout, stderr)
}

// recordHarnessFlags parses record's harness flags as --stdio's; on a
// mistake it says so and returns nil and exit code 2.
func recordHarnessFlags(rest []string, stderr io.Writer) (*options, int) {
	o, err := parse(append([]string{"--stdio"}, withoutFlag(rest, "stdio")...), stderr)
	if err != nil {
		fmt.Fprintf(stderr, "openmax record: %v\n", err)
		return nil, 2
	}
	return o, 0
}

// liveResult ends a replay that went (partly) live: the transcript on
// stdout, on stderr what did not replay as recorded (refused commands,
// hooks and reloads otherwise than recorded: the requests that missed went
// live), and the exit code: 1 for such a problem, else the harness's.
func liveResult(r tape.Result, who, path string, stdout, stderr io.Writer) int {
	stdout.Write(r.Stdout)
	problems := append(append(append([]string(nil), r.Refused...), r.Hooks...), r.Reloads...)
	for _, p := range problems {
		fmt.Fprintf(stderr, "%s: %s did not replay as recorded: %s\n", who, path, p)
	}
	if len(problems) > 0 {
		return 1
	}
	return r.Exit
}

// indexList is " (0, 1, 2)" for a short list of indices, "" for none.
func indexList(ids []int) string {
	if len(ids) == 0 {
		return ""
	}
	s := make([]string, 0, len(ids))
	for i, id := range ids {
		if i == 12 {
			s = append(s, fmt.Sprintf("… %d more", len(ids)-i))
			break
		}
		s = append(s, fmt.Sprint(id))
	}
	return " (" + strings.Join(s, ", ") + ")"
}

// upstreamTransport sends a request addressed to the fake provider to
// upstream instead (its scheme and host, its path prefixed), through rt.
func upstreamTransport(up *url.URL, rt http.RoundTripper) http.RoundTripper {
	if rt == nil {
		rt = http.DefaultTransport
	}
	return roundTrip(func(req *http.Request) (*http.Response, error) {
		out := req.Clone(req.Context())
		u := *req.URL
		u.Scheme, u.Host = up.Scheme, up.Host
		if p := strings.TrimSuffix(up.Path, "/"); p != "" {
			u.Path = p + u.Path
			u.RawPath = ""
		}
		out.URL, out.Host = &u, up.Host
		return rt.RoundTrip(out)
	})
}
