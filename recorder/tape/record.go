package tape

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/openmax/openmax/core/harness"
	"github.com/openmax/openmax/core/tool"
	"github.com/openmax/openmax/core/wire"
	"github.com/openmax/openmax/recorder"
	"github.com/openmax/openmax/recorder/cassette"
)

// RecordOptions configure Record.
type RecordOptions struct {
	// Config and Deps build the live harness, exactly as for Serve. Deps'
	// Transport is the live one the recorder sends through.
	Config harness.Config
	Deps   harness.Deps
	// Cassette is where and how to record (path, scrubbing, overwrite);
	// its Transport and Clock are Deps'.
	Cassette recorder.Options
}

// Record runs the live harness on in and out exactly as harness.Serve
// does, recording every provider exchange, the client's commands with the
// protocol point each arrived at, the tools offered and what their calls
// returned, and the harness's configuration into the cassette, which is
// saved after each of them: a crash leaves a cassette that replays up to
// that point. The session is not saved to the state directory.
//
// The harness is assembled, and the key checked, before the cassette path
// is touched: a mistake in the configuration (*harness.ConfigError) never
// costs a recording.
func Record(ctx context.Context, in io.Reader, out io.Writer, o RecordOptions) (int, error) {
	cfg := o.Config
	if cfg.SessionID == "" {
		cfg.SessionID = harness.NewSessionID()
	}
	sess := &cassette.Session{SessionID: cfg.SessionID, Seed: randomSeed()}
	var rec *recorder.Recorder
	deps := o.Deps
	deps.Transport = roundTripFunc(func(r *http.Request) (*http.Response, error) { return rec.RoundTrip(r) })
	deps.Seed = sess.Seed
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
	c := &capture{rec: rec, sess: sess}
	eng := h.Engine()
	if eng.Tools, err = c.recordTools(eng.Tools); err != nil {
		return 0, errors.Join(err, rec.Close())
	}
	if err := rec.SetSession(c.snapshot()); err != nil {
		return 0, errors.Join(err, rec.Close())
	}
	code, err := h.ServeWith(ctx, c.reader(in), c.writer(out), harness.ServeOptions{NoSave: true})
	serr := rec.SetSession(c.snapshot())
	cerr := rec.Close()
	return code, errors.Join(err, serr, cerr)
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func randomSeed() uint64 {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return binary.LittleEndian.Uint64(b[:])
}

// capture records the client's commands with the protocol point each
// arrived at, saving the cassette after each one.
type capture struct {
	rec  *recorder.Recorder
	mu   sync.Mutex
	sess *cassette.Session
	pos  cassette.Position
}

func (c *capture) snapshot() *cassette.Session {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sess.Clone()
}

func (c *capture) writer(w io.Writer) io.Writer {
	return writerFunc(func(p []byte) (int, error) {
		// Observe before writing: once the client can read the line, a
		// command it sends in answer must be recorded as coming after it.
		c.mu.Lock()
		for rest := p; len(rest) > 0; {
			var line []byte
			line, rest, _ = bytes.Cut(rest, []byte("\n"))
			c.pos.Observe(line)
			if n, ok := wire.AnswersLine(line); ok && n <= len(c.sess.Commands) {
				c.sess.Commands[n-1].Refused = true
			}
		}
		c.mu.Unlock()
		return w.Write(p)
	})
}

// reader passes stdin through, noting each complete line as it is read.
func (c *capture) reader(r io.Reader) io.Reader {
	pr, pw := io.Pipe()
	go func() {
		br := bufio.NewReaderSize(r, 64<<10)
		var line []byte
		for {
			chunk, err := br.ReadSlice('\n')
			if len(line) <= wire.MaxLine { // a longer line is refused anyway; its recorded copy stops just past the cap
				line = append(line, chunk...)
			}
			complete := err == nil
			if complete {
				// Noted before the harness can see it, so the line count is
				// the one the client saw when it sent the command.
				c.note(strings.TrimSuffix(strings.TrimSuffix(string(line), "\n"), "\r"))
				line = line[:0]
			}
			if _, werr := pw.Write(chunk); werr != nil {
				return
			}
			if complete || errors.Is(err, bufio.ErrBufferFull) {
				continue
			}
			if len(line) > 0 {
				c.note(string(line))
			}
			pw.CloseWithError(err)
			return
		}
	}()
	return pr
}

// recordTools wraps every tool so its results are stored in the cassette.
func (c *capture) recordTools(reg *tool.Registry) (*tool.Registry, error) {
	var wrapped []tool.Tool
	for _, spec := range reg.Specs() {
		t, _ := reg.Lookup(spec.Name)
		c.sess.Tools = append(c.sess.Tools, cassette.Tool{Name: spec.Name, Description: spec.Description, Schema: string(spec.Schema)})
		wrapped = append(wrapped, tool.Func{ToolSpec: spec, Fn: func(ctx context.Context, args json.RawMessage) tool.Result {
			res := t.Run(ctx, args)
			c.mu.Lock()
			c.sess.ToolResults = append(c.sess.ToolResults, cassette.ToolResult{Name: spec.Name, Args: string(args), OK: res.OK, Output: res.Output})
			c.mu.Unlock()
			_ = c.rec.SetSession(c.snapshot())
			return res
		}})
	}
	return tool.NewRegistry(wrapped...)
}

func (c *capture) note(line string) {
	c.mu.Lock()
	c.sess.Commands = append(c.sess.Commands, cassette.Command{Anchor: c.pos.Here(), Line: line})
	c.mu.Unlock()
	_ = c.rec.SetSession(c.snapshot())
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
