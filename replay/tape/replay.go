package tape

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/openmax/openmax/core"
	"github.com/openmax/openmax/core/harness"
	"github.com/openmax/openmax/core/stdio"
	"github.com/openmax/openmax/core/tool"
	"github.com/openmax/openmax/provider/codec"
	"github.com/openmax/openmax/recorder"
	"github.com/openmax/openmax/recorder/cassette"
	"github.com/openmax/openmax/recorder/replay"
)

// PlaceholderKey stands in for API keys on replay: nothing is sent anywhere.
const PlaceholderKey = "replay-no-key"

// NoSessionNextStep says what to do instead with the cassette at path
// when Replay returned ErrNoSession: serve it to the client that made it,
// or make a session up from its first request. The CLI and goldens.Run
// both say it.
func NoSessionNextStep(path string) string {
	return "  serve it to the client that made it: openmax fake-provider --cassette " + path +
		"\n  or make up a session from its first request: openmax cassette import " + path + " OUT.yaml, then openmax replay OUT.yaml"
}

// ErrNoSession reports a cassette without a recorded harness session.
var ErrNoSession = errors.New("the cassette holds no recorded harness session (a proxy recording, or another tool's), so there is nothing to replay through the engine")

// ReplayOptions configure Replay.
type ReplayOptions struct {
	// Serving is how the cassette's traffic is served: pacing, its clock,
	// and the matching rules. Replay sets what a session replay needs
	// (misses answered as vendor-shaped errors, secrets scrubbed, imported
	// sessions served in order).
	Serving replay.Options
	// Log receives diagnostics; nil discards them.
	Log io.Writer
	// LiveHooks, when set, run instead of the recorded hook calls: a new
	// hook tried against the recorded provider traffic. Its calls are
	// not checked against the recording.
	LiveHooks core.Hooks
	// Tee, when set, also receives the harness's stdout, each line
	// before its write returns to the harness (so a request the harness
	// makes next sees every line written before it).
	Tee io.Writer
	// Live, when set, sends requests to the network as its Policy says
	// and records them into a new cassette (record modes missing and
	// refresh on a recorded session, record --from-change).
	Live *Live
}

// Result is what a replay produced, and where it did not reproduce the
// recording.
type Result struct {
	Stdout  []byte     // the harness's stdout
	Exit    int        // its exit code
	Stdin   []byte     // the commands delivered, one per line
	Refused []string   // recorded commands the replay refused
	Misses  []string   // requests no recorded interaction answered
	Unused  []int      // recorded interactions never requested
	Hooks   []string   // hook calls the replay made otherwise than recorded
	Reloads []string   // reloads the replay made otherwise than recorded
	Live    LiveResult // what went live, under ReplayOptions.Live
}

// Transcript is the golden form of the replay: the stdout lines, then
// "exit: N".
func (r Result) Transcript() []byte {
	return fmt.Appendf(bytes.Clone(r.Stdout), "exit: %d\n", r.Exit)
}

// Problems lists why the replay did not reproduce the recording, unused
// interactions left out when allowUnused.
func (r Result) Problems(allowUnused bool) []string {
	out := append(append(append(append([]string(nil), r.Refused...), r.Misses...), r.Hooks...), r.Reloads...)
	if len(r.Unused) > 0 && !allowUnused {
		ids := make([]string, len(r.Unused))
		for i, u := range r.Unused {
			ids[i] = strconv.Itoa(u)
		}
		out = append(out, fmt.Sprintf("%d recorded interaction(s) never requested: %s (--allow-unused accepts that)", len(r.Unused), strings.Join(ids, ", ")))
	}
	return out
}

// Replay replays the harness session recorded in f through the real
// harness (core/harness, the stdio server and the turn engine), built from
// the recorded configuration: the cassette serves the provider traffic,
// the recorded tool results stand in for the tools, the recorded client's
// commands are delivered at the points they were sent at, and every wait
// passes on virtual time, so a replay takes no wall time and gives the
// same bytes every time. A cassette without a session is ErrNoSession.
func Replay(ctx context.Context, f *cassette.File, o ReplayOptions) (Result, error) {
	var r Result
	sess := f.Session
	if sess == nil {
		return r, ErrNoSession
	}
	log := o.Log
	if log == nil {
		log = io.Discard
	}
	cfg, err := sess.HarnessConfig()
	if err != nil {
		return r, fmt.Errorf("recorded configuration: %w", err)
	}
	if cfg.Provider == "codex" {
		return r, errCodexSession
	}
	project := cfg.Project // the recorded path, reported as recorded
	cfg.Project, cfg.SessionID, cfg.Continue = "", sess.SessionID, false
	// Recorded endings replay as recorded: no watchdog on the replay's
	// virtual clock (it passes time whenever the harness is quiet) may end
	// a reply the recording completed.
	cfg.IdleTimeout, cfg.HeaderTimeout, cfg.ReplyTimeout = 0, 0, 0

	so := o.Serving
	so.MissAsResponse, so.Scrub, so.InOrder = true, recorder.ScrubFunc(nil), sess.Imported
	var (
		rp        *replay.Replayer
		transport http.RoundTripper
		lt        *liveTransport
	)
	credential := func(string) string { return PlaceholderKey }
	if o.Live != nil {
		if sess.Imported {
			return r, errors.New("the session of an imported recording is made up: it cannot go live (record the session with openmax record)")
		}
		if o.Live.BaseURL != "" {
			cfg.BaseURL = o.Live.BaseURL
		}
		if lt, err = newLiveTransport(*o.Live, f, so); err != nil {
			return r, err
		}
		rp, transport = lt.rp, lt
		if get := o.Live.Getenv; get != nil {
			credential = func(k string) string {
				if v := get(k); v != "" {
					return v
				}
				return PlaceholderKey
			}
		}
	} else {
		rp = replay.New(f, so)
		transport = rp
		if sess.Imported {
			transport = &rejectionRouter{rp: rp, f: f, log: log}
		}
	}
	replayed := &replayedHooks{calls: sess.Hooks}
	results := newToolResults(sess)
	reloads := &replayedReloads{reloads: sess.Reloads, results: results}
	var reload harness.Reloader
	if !legacyReloads(sess) {
		reload = reloads.answer
	}
	var stdout, stdin bytes.Buffer
	var out io.Writer = &stdout
	if o.Tee != nil {
		out = io.MultiWriter(&stdout, o.Tee)
	}
	p := player{cmds: sess.Commands, stdout: out, stdin: &stdin,
		refused: func(i int, c cassette.Command, msg string) {
			r.Refused = append(r.Refused, fmt.Sprintf("recorded command %d (%s) was refused: %s", i, oneLine(c.Line), msg))
		}}
	code, err := p.play(ctx, func(ctx context.Context, conn stdio.Conn, hk hooks) (int, error) {
		h, err := harness.New(cfg, harness.Deps{
			Transport: transport, Clock: hk.clock, Seed: sess.Seed, Log: log,
			Getenv: func(k string) string {
				if strings.HasSuffix(k, "_API_KEY") || slices.Contains(codec.CredentialEnv(), k) {
					return credential(k)
				}
				return ""
			},
			Tools: results.tools(sess.Tools), NoBuiltin: true, PlaceholderKeys: o.Live == nil,
			NoHooks: true,
		})
		if err != nil {
			conn.Close()
			return 0, fmt.Errorf("recorded configuration: %w", err)
		}
		switch eng := h.Engine(); {
		case o.LiveHooks != nil:
			eng.Hooks = o.LiveHooks
		case len(sess.Hooks) > 0:
			eng.Hooks = replayed
		}
		if len(sess.Denials) > 0 { // deny.go
			h.Engine().Deny = &replayedDenier{decisions: slices.Clone(sess.Denials)}
		}
		reloads.base, reloads.cur = h.Engine(), h.Engine()
		if sess.Imported {
			eng := h.Engine()
			eng.Provider = &recordingEnd{next: eng.Provider, rp: rp, log: log}
		}
		return h.ServeConn(ctx, conn, harness.ServeOptions{
			NoSave: true, Trusted: true, Project: project,
			Handled: hk.handled, Stepped: hk.stepped, Reload: reload,
		})
	})
	if lt != nil {
		var lerr error
		r.Live, lerr = lt.finish()
		err = errors.Join(err, lerr)
	}
	if err != nil {
		return r, err
	}
	for _, m := range rp.Misses() {
		r.Misses = append(r.Misses, fmt.Sprintf("request %d missed: %v", m.Request, m.MissError))
	}
	if o.LiveHooks == nil {
		r.Hooks = replayed.problems()
	}
	r.Reloads = reloads.problems()
	r.Stdout, r.Exit, r.Unused, r.Stdin = stdout.Bytes(), code, rp.Unused(), stdin.Bytes()
	return r, nil
}

// oneLine shortens a command line for a message.
func oneLine(s string) string {
	if len(s) > 80 {
		return s[:77] + "..."
	}
	return s
}

// gatedTool is a recorded tool the approval policy gated when recorded.
type gatedTool struct{ tool.Func }

func (gatedTool) Mutating() bool { return true }

// sourceTool is a recorded external tool: its source gate answers as it
// did when recorded, check by check, and approving changes nothing (no
// file is read or remembered). Once the recorded checks run out the files
// count as approved.
type sourceTool struct {
	gatedTool
	mu  sync.Mutex
	src cassette.ToolSource
}

func (s *sourceTool) UnapprovedSource() (string, string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.src.Checks) == 0 {
		return "", "", nil
	}
	c := s.src.Checks[0]
	s.src.Checks = s.src.Checks[1:]
	if c.Error != "" {
		return "", "", errors.New(c.Error)
	}
	return c.Path, c.SHA, nil
}

func (s *sourceTool) ApproveSource(string, string) error { return nil }
func (s *sourceTool) EnvGrant() []string                 { return s.src.Env }
func (s *sourceTool) SourceDetail() string               { return s.src.Detail }

// RunApproved answers with the next recorded result, as Run does.
func (s *sourceTool) RunApproved(ctx context.Context, args json.RawMessage) tool.Result {
	return s.Run(ctx, args)
}
