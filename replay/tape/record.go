package tape

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"sync"

	"github.com/openmax/openmax/core"
	"github.com/openmax/openmax/core/harness"
	"github.com/openmax/openmax/core/hook"
	"github.com/openmax/openmax/core/stdio"
	"github.com/openmax/openmax/core/tool"
	"github.com/openmax/openmax/core/wire"
	"github.com/openmax/openmax/provider"
	"github.com/openmax/openmax/recorder"
	"github.com/openmax/openmax/recorder/cassette"
)

// RecordOptions configure Record.
type RecordOptions struct {
	// Config and Deps build the live harness, exactly as for Serve. Deps'
	// Transport is the live one the recorder sends through.
	Config harness.Config
	Deps   harness.Deps
	// Cassette is where and how to record (path, scrubbing, overwrite,
	// interactions kept from an older cassette); its Transport and Clock
	// are Deps'.
	Cassette recorder.Options
	// Front, when set, stands before the recorder: it gets every request
	// the harness sends, with rec to send on what it does not answer
	// itself (record mode missing: a replayer of the older cassette whose
	// misses go to rec).
	Front func(rec http.RoundTripper) http.RoundTripper
}

// errCodexSession refuses to record or replay a --provider codex session
// as a cassette.
var errCodexSession = errors.New("a --provider codex session is recorded as its app-server transcript, not a cassette: run it with --codex-transcript FILE and replay it with --codex \"openmax fake-app-server --transcript FILE\" (docs/codex-backend.md)")

// Record runs the live harness on in and out exactly as harness.Serve
// does, recording every provider exchange, the client's commands with the
// protocol point each arrived at, the tools offered and what their calls
// returned, and the harness's configuration into the cassette. Each
// provider exchange is saved (and synced) as it completes; a change to the
// recorded session (a command read, a command acted on, a tool's result) is
// staged and written to the cassette before the next line goes to the
// client. That is what the contract needs: whatever the client has seen
// reported is in the cassette, so a crash leaves a cassette that replays
// up to what the client saw, and the harness never waits on the cassette
// between reading a command and acting on it (a command and its
// re-anchoring are one write). The session is not saved to the state
// directory.
//
// The harness is assembled, and the key checked, before the cassette path
// is touched: a mistake in the configuration (*harness.ConfigError) never
// costs a recording.
func Record(ctx context.Context, in io.Reader, out io.Writer, o RecordOptions) (int, error) {
	cfg := o.Config
	if cfg.Provider == "codex" {
		// Its model traffic is codex's, not openmax's: nothing to record
		// here, and a replay would start codex.
		return 0, &harness.ConfigError{Err: errCodexSession}
	}
	if cfg.SessionID == "" {
		cfg.SessionID = harness.NewSessionID()
	}
	sess := &cassette.Session{SessionID: cfg.SessionID, Seed: randomSeed()}
	var rec *recorder.Recorder
	deps := o.Deps
	deps.Transport = roundTripFunc(func(r *http.Request) (*http.Response, error) { return rec.RoundTrip(r) })
	if o.Front != nil {
		deps.Transport = o.Front(deps.Transport)
	}
	deps.Seed = sess.Seed
	var hooks *recordingHooks // set once the harness is built; hooks run only in turns
	if deps.HookExchange == nil {
		deps.HookExchange = func(x hook.Exchange) {
			if hooks != nil {
				hooks.exchanged(exchangeOf(x))
			}
		}
	}
	h, err := harness.New(cfg, deps)
	if err != nil {
		return 0, err
	}
	ro := o.Cassette
	ro.Transport, ro.Clock = o.Deps.Transport, o.Deps.Clock
	if rec, err = recorder.New(ro); err != nil {
		return 0, err
	}
	stored := h.Config()
	stored.Project = h.Project()
	stored.BaseURL = recorder.ScrubURL(stored.BaseURL)
	stored.SessionID, stored.Continue = "", false
	sess.Config = &stored
	eng := h.Engine()
	c := &capture{rec: rec, sess: sess, secrets: eng.Secrets}
	if eng.Tools, err = c.recordTools(eng.Tools); err != nil {
		return 0, errors.Join(err, rec.Close())
	}
	eng.Deny = c.denying(eng.Deny) // deny.go
	if eng.Hooks != nil {
		hooks = &recordingHooks{next: eng.Hooks, c: c}
		eng.Hooks = hooks
	}
	if err := rec.SetSession(c.snapshot()); err != nil {
		return 0, errors.Join(err, rec.Close())
	}
	code, err := h.ServeConn(ctx, &recordingConn{StreamConn: stdio.NewStreamConn(in, out), c: c},
		harness.ServeOptions{NoSave: true, Acting: c.acting, Reload: c.reload, Persist: c.recording})
	serr := rec.SetSession(c.snapshot())
	cerr := rec.Close()
	if cerr == serr {
		cerr = nil // the recording stopped at a failed save: said once
	}
	return code, errors.Join(err, serr, cerr)
}

// recording is the session's persist check: nil while the cassette is
// being written, and the recorder's ErrIncomplete once a save failed, so
// the turn that meets it, and every turn after, ends with an error line
// saying the recording is incomplete instead of reporting a success the
// cassette does not hold.
func (c *capture) recording(provider.Message) error { return c.rec.Err() }

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func randomSeed() uint64 {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return binary.LittleEndian.Uint64(b[:])
}

// capture records the client's commands with the protocol point each
// arrived at, staging the session after each change (see Record).
type capture struct {
	rec  *recorder.Recorder
	mu   sync.Mutex
	sess *cassette.Session
	pos  cassette.Position
	// secrets are the engine's (core.Engine.Secrets): a tool's result is
	// kept scrubbed of them, as the engine itself keeps it.
	secrets []string
}

func (c *capture) snapshot() *cassette.Session {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sess.Clone()
}

// recordingConn is the live client's connection with every line noted:
// each command as it is read (before the harness acts on it, so its
// anchor is the point the client had seen when it sent it), each protocol
// line before it is written (once the client can read a line, a command
// it sends in answer must be recorded as coming after it).
//
// It embeds the StreamConn itself, not just its Conn methods, so the
// server still sees its batching (stdio.Batching: Flush, Failed) and a
// stdout that is gone ends a recorded session as promptly as a live one.
type recordingConn struct {
	*stdio.StreamConn
	c *capture
}

func (r *recordingConn) ReadLine() ([]byte, error) {
	line, err := r.StreamConn.ReadLine()
	var tooLong *wire.LineTooLongError
	switch {
	case err == nil:
		r.c.note(cassette.Command{Line: string(line)})
	case errors.As(err, &tooLong):
		r.c.note(cassette.Command{TooLong: tooLong.Size})
	}
	return line, err
}

// WriteLine writes the staged session to the cassette before the line goes
// out: the line may report a command, a tool's result or a refusal, and
// the client must never see one the cassette does not hold.
func (r *recordingConn) WriteLine(line []byte) error {
	c := r.c
	c.mu.Lock()
	c.pos.Observe(line)
	if n, ok := wire.AnswersLine(line); ok && n <= len(c.sess.Commands) && !c.sess.Commands[n-1].Refused {
		c.sess.Commands[n-1].Refused = true
		c.stageLocked()
	}
	c.mu.Unlock()
	_ = c.rec.FlushSession() // a failed save is reported by Record's last one
	return r.StreamConn.WriteLine(line)
}

// recordTools wraps every tool so its results are stored in the cassette,
// and lists the tools offered in the session's tools.
func (c *capture) recordTools(reg *tool.Registry) (*tool.Registry, error) {
	wrapped, tools, err := c.wrapTools(reg)
	c.sess.Tools = append(c.sess.Tools, tools...)
	return wrapped, err
}

// wrapTools wraps every tool of reg so its results are stored in the
// cassette, and says what the cassette keeps of each. A wrapped tool keeps
// what the approval policy reads of it: a mutating tool is still gated,
// and an external tool still asks for unapproved sources and runs pinned
// to approved bytes, so recording a session asks the same approvals as
// running it.
func (c *capture) wrapTools(reg *tool.Registry) (*tool.Registry, []cassette.Tool, error) {
	var wrapped []tool.Tool
	var tools []cassette.Tool
	for _, spec := range reg.Specs() {
		t, _ := reg.Lookup(spec.Name)
		rt := recordedTool{Tool: t, capture: c}
		ct := cassette.Tool{Name: spec.Name, Description: spec.Description, Schema: string(spec.Schema), Mutating: rt.Mutating()}
		if src, ok := t.(core.SourceGated); ok {
			ct.Mutating = true // gated whatever it says
			ct.Source = &cassette.ToolSource{Env: src.EnvGrant(), Detail: src.SourceDetail()}
			tools = append(tools, ct)
			wrapped = append(wrapped, recordedSourceTool{recordedTool: rt, src: src, kept: ct.Source})
			continue
		}
		tools = append(tools, ct)
		wrapped = append(wrapped, rt)
	}
	out, err := tool.NewRegistry(wrapped...)
	return out, tools, err
}

// recordedTool is a live tool whose results go into the cassette.
type recordedTool struct {
	tool.Tool
	capture *capture
}

func (r recordedTool) Run(ctx context.Context, args json.RawMessage) tool.Result {
	return r.keep(args, r.Tool.Run(ctx, args))
}

// Mutating is the live tool's: the approval gate applies while recording.
func (r recordedTool) Mutating() bool {
	m, ok := r.Tool.(tool.Mutator)
	return ok && m.Mutating()
}

func (r recordedTool) keep(args json.RawMessage, res tool.Result) tool.Result {
	c := r.capture
	res = res.Redacted(c.secrets)
	c.mu.Lock()
	c.sess.ToolResults = append(c.sess.ToolResults, cassette.ToolResult{Name: r.Spec().Name, Args: string(args), OK: res.OK, Output: res.Output})
	c.stageLocked()
	c.mu.Unlock()
	return res
}

// recordedSourceTool is a recorded external tool: the source gate is the
// live tool's, and its approved runs are recorded too.
type recordedSourceTool struct {
	recordedTool
	src  core.SourceGated
	kept *cassette.ToolSource // its entry in the cassette, under capture.mu
}

// UnapprovedSource is the live tool's answer, kept in the cassette.
func (r recordedSourceTool) UnapprovedSource() (string, string, error) {
	path, sum, err := r.src.UnapprovedSource()
	check := cassette.SourceCheck{Path: path, SHA: sum}
	if err != nil {
		check.Error = err.Error()
	}
	c := r.capture
	c.mu.Lock()
	r.kept.Checks = append(r.kept.Checks, check)
	c.stageLocked()
	c.mu.Unlock()
	return path, sum, err
}

func (r recordedSourceTool) ApproveSource(path, sum string) error {
	return r.src.ApproveSource(path, sum)
}
func (r recordedSourceTool) EnvGrant() []string   { return r.src.EnvGrant() }
func (r recordedSourceTool) SourceDetail() string { return r.src.SourceDetail() }

func (r recordedSourceTool) RunApproved(ctx context.Context, args json.RawMessage) tool.Result {
	return r.keep(args, r.src.RunApproved(ctx, args))
}

// acting re-anchors command n (stdin line n) at the protocol point where
// the harness acts on it. A line is read ahead of that (and noted then,
// so a crash keeps it); meanwhile a running turn may write more lines, and
// a replay must deliver the command where it took effect.
func (c *capture) acting(n int) {
	c.mu.Lock()
	if n >= 1 && n <= len(c.sess.Commands) {
		c.sess.Commands[n-1].Anchor = c.pos.Here()
		c.stageLocked()
	}
	c.mu.Unlock()
}

// note records a command at the current protocol point.
func (c *capture) note(cmd cassette.Command) {
	c.mu.Lock()
	cmd.Anchor = c.pos.Here()
	c.sess.Commands = append(c.sess.Commands, cmd)
	c.stageLocked()
	c.mu.Unlock()
}

// stageLocked hands the session as it stands to the recorder, to be written
// before the next line goes to the client.
func (c *capture) stageLocked() { c.rec.StageSession(c.sess) }
