package appserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"sync"

	"github.com/openmax/openmax/internal/jsonrpc"
	"github.com/openmax/openmax/internal/linediff"
	"github.com/openmax/openmax/provider/codex/transcript"
)

// Options tune Serve.
type Options struct {
	// MaxLine caps one line from the client; 0 means DefaultMaxLine.
	MaxLine int
	// Trace, when not nil, hears one line for every transcript line
	// written or matched, for following a replay.
	Trace io.Writer
}

// Errors Serve returns, for errors.Is.
var (
	// ErrMiss is a client line that did not match the transcript
	// (*MissError).
	ErrMiss = errors.New("the client's line does not match the transcript")
	// ErrLeftover is the client closing its stdin before the end of the
	// transcript (*LeftoverError).
	ErrLeftover = errors.New("the client closed its stdin before the end of the transcript")
)

// MissCode is the JSON-RPC error code of the answer to a request that
// missed, and AnswerPrefix starts its message (the *MissError's text
// follows), so a client's log says who answered.
const (
	MissCode     = -32001
	AnswerPrefix = "openmax fake app-server: "
)

// MissError is a client line that matched no line the transcript expected
// next: its message says what was expected and holds the diff.
type MissError struct {
	ClientLine int    // the client's line, counting from 1
	Line       int    // the transcript line it was compared with; 0 when none
	Reason     string // one sentence
	Diff       string // normalised recorded vs received, unified; "" when nothing was compared
}

func (e *MissError) Error() string {
	s := e.Reason
	if e.Diff != "" {
		s += "\n" + strings.TrimRight(e.Diff, "\n")
	}
	return s
}

// Is makes errors.Is(err, ErrMiss) true.
func (e *MissError) Is(target error) bool { return target == ErrMiss }

// LeftoverError is the end of the client's input with transcript lines
// never replayed.
type LeftoverError struct {
	Lines []int // the transcript line numbers never reached, in order
	Sends int   // how many of them are lines the client should have sent
	list  string
}

func (e *LeftoverError) Error() string {
	return fmt.Sprintf("the client closed its stdin with %d transcript lines not replayed (%d of them its own):%s",
		len(e.Lines), e.Sends, e.list)
}

// Is makes errors.Is(err, ErrLeftover) true.
func (e *LeftoverError) Is(target error) bool { return target == ErrLeftover }

// Serve plays the app-server side of t: the client's lines are read from
// in, the app-server's written to out, one line each, flushed line by
// line. It returns when the client closes in (nil when the whole
// transcript was replayed, a *LeftoverError otherwise), at the first miss
// (a *MissError, after answering the line if it was a request), when
// writing to out fails, or when ctx is done. A read of in or a write to
// out blocked at that moment is left to end when the caller closes them;
// Serve's goroutines end with it.
func Serve(ctx context.Context, t *Transcript, in io.Reader, out io.Writer, opts Options) error {
	return newServer(t, in, out, opts).run(ctx)
}

// clientLine is one line read from the client, or the error ending them.
type clientLine struct {
	b   []byte
	err error
}

// server is one replay.
type server struct {
	t     *Transcript
	in    io.Reader
	out   io.Writer
	opts  Options
	ids   map[string]jsonrpc.ID // recorded request id (matchID) → the client's, as it sent it
	paths *pathMap
	n     int // client lines read

	wg sync.WaitGroup // the reader and the writer
	// The reader queues every line as soon as it is read, so a client
	// writing ahead of its reading never finds its stdin full.
	mu     sync.Mutex
	queue  []clientLine
	ready  chan struct{} // a line was queued (capacity 1)
	writes chan []byte   // run → writer
	wdone  chan struct{} // closed when the writer ends; werr says why
	werr   error
}

func newServer(t *Transcript, in io.Reader, out io.Writer, opts Options) *server {
	if opts.MaxLine <= 0 {
		opts.MaxLine = DefaultMaxLine
	}
	return &server{t: t, in: in, out: out, opts: opts, ids: map[string]jsonrpc.ID{}, paths: &pathMap{},
		ready: make(chan struct{}, 1), writes: make(chan []byte, 64), wdone: make(chan struct{})}
}

func (s *server) run(ctx context.Context) error {
	s.wg.Add(2)
	go s.read()
	go s.write()
	err := s.walk(ctx)
	close(s.writes)
	select {
	case <-s.wdone:
		if err == nil {
			err = s.werr
		}
	case <-ctx.Done():
		if err == nil {
			err = fmt.Errorf("replay stopped: %w", ctx.Err())
		}
	}
	return err
}

// read queues the client's lines, then the error ending them.
func (s *server) read() {
	defer s.wg.Done()
	lr := jsonrpc.NewReader(s.in, s.opts.MaxLine)
	for {
		b, err := lr.ReadLine()
		s.mu.Lock()
		s.queue = append(s.queue, clientLine{b: b, err: err})
		s.mu.Unlock()
		select {
		case s.ready <- struct{}{}:
		default:
		}
		if err != nil {
			return
		}
	}
}

// pop takes the oldest queued line.
func (s *server) pop() (clientLine, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.queue) == 0 {
		return clientLine{}, false
	}
	cl := s.queue[0]
	s.queue[0] = clientLine{}
	s.queue = s.queue[1:]
	return cl, true
}

// write writes the lines it is given, flushing each.
func (s *server) write() {
	defer s.wg.Done()
	defer close(s.wdone)
	bw := bufio.NewWriter(s.out)
	for b := range s.writes {
		bw.Write(b)
		bw.WriteByte('\n')
		if err := bw.Flush(); err != nil {
			s.werr = fmt.Errorf("writing to the client: %w", err)
			return
		}
	}
}

// emit hands one line to the writer.
func (s *server) emit(ctx context.Context, b []byte) error {
	select {
	case s.writes <- b:
		return nil
	case <-s.wdone:
		return s.werr
	case <-ctx.Done():
		return fmt.Errorf("replay stopped: %w", ctx.Err())
	}
}

// next returns the client's next line; io.EOF when it closed its stdin.
func (s *server) next(ctx context.Context) (*received, error) {
	cl, ok := s.pop()
	for !ok {
		select {
		case <-s.ready:
		case <-s.wdone:
			return nil, s.werr
		case <-ctx.Done():
			return nil, fmt.Errorf("replay stopped: %w", ctx.Err())
		}
		cl, ok = s.pop()
	}
	if errors.Is(cl.err, io.EOF) {
		return nil, io.EOF
	}
	s.n++
	var tl *jsonrpc.TooLongError
	if errors.As(cl.err, &tl) {
		return nil, &MissError{ClientLine: s.n, Reason: fmt.Sprintf("client line %d: %v", s.n, tl)}
	}
	if cl.err != nil {
		return nil, fmt.Errorf("reading the client: %w", cl.err)
	}
	return parseReceived(s.n, cl.b), nil
}

// walk replays the transcript, then waits for the end of the client's
// input.
func (s *server) walk(ctx context.Context) error {
	ls := s.t.Lines
	for i := 0; i < len(ls); {
		if ls[i].Dir == transcript.DirRecv {
			if err := s.emit(ctx, s.outgoing(&ls[i])); err != nil {
				return err
			}
			s.trace("wrote %s", &ls[i])
			i++
			continue
		}
		// A group of consecutive client lines, matched in any order.
		j := i
		for j < len(ls) && ls[j].Dir == transcript.DirSend {
			j++
		}
		pending := make([]*Line, 0, j-i)
		for k := i; k < j; k++ {
			pending = append(pending, &ls[k])
		}
		for len(pending) > 0 {
			r, err := s.next(ctx)
			if errors.Is(err, io.EOF) {
				return s.leftover(pending, ls[j:])
			}
			if err != nil {
				return err
			}
			k := s.match(r, pending)
			if k < 0 {
				return s.miss(ctx, r, pending)
			}
			s.trace("client line %d matched %s", r.n, pending[k])
			pending = append(pending[:k], pending[k+1:]...)
		}
		i = j
	}
	r, err := s.next(ctx)
	if errors.Is(err, io.EOF) {
		return nil
	}
	if err != nil {
		return err
	}
	return s.miss(ctx, r, nil)
}

// outgoing is a recorded app-server line as the client is to see it.
func (s *server) outgoing(l *Line) []byte {
	switch l.kind {
	case kindRaw:
		return []byte(l.raw())
	case kindResponse:
		if id, ok := s.ids[l.id]; ok && id.String() != l.id {
			return rewrite(l.Msg, id.Raw(), s.paths)
		}
	}
	return rewrite(l.Msg, nil, s.paths)
}

// received is one line from the client.
type received struct {
	n      int
	b      []byte
	v      any  // the parsed value when isJSON
	isJSON bool // b is one JSON value
	kind   kind
	sentID jsonrpc.ID // a request's or a response's id, as the client sent it
	id     string     // sentID as matched (matchID)
	method string
}

func parseReceived(n int, b []byte) *received {
	r := &received{n: n, b: b, kind: kindRaw}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return r
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return r // more than one value: not a JSON line
	}
	r.v, r.isJSON = v, true
	// A JSON string stays kindRaw: as a recorded line that was not JSON.
	r.kind, r.sentID, r.method, _ = classify(b)
	if r.sentID.IsValid() {
		r.id = matchID(r.sentID)
	}
	return r
}

func (r *received) String() string {
	return fmt.Sprintf("client line %d (%s)", r.n, describe(r.kind, r.id, r.method))
}

// match returns the index in pending of the first line r matches, -1 for
// none. A match learns what it needed: the request's id and new paths.
func (s *server) match(r *received, pending []*Line) int {
	for k, l := range pending {
		if !r.isJSON {
			if l.kind == kindRaw {
				if want, _ := s.paths.apply(l.raw()); want == string(r.b) {
					return k
				}
			}
			continue
		}
		if r.kind != l.kind || r.method != l.method {
			continue
		}
		if l.kind == kindResponse && r.id != l.id {
			continue
		}
		rec, err := decode(l.Msg)
		if err != nil {
			continue
		}
		found := map[string]string{}
		learn(rec, r.v, s.paths, found)
		paths := s.paths.with(found)
		if !reflect.DeepEqual(normalise(rec, paths), normalise(r.v, nil)) {
			continue
		}
		s.paths = paths
		if l.kind == kindRequest {
			s.ids[l.id] = r.sentID
		}
		return k
	}
	return -1
}

// miss explains r, which matched none of pending (nil after the end of
// the transcript), answers it when it is a request and returns the error.
func (s *server) miss(ctx context.Context, r *received, pending []*Line) error {
	e := &MissError{ClientLine: r.n}
	switch len(pending) {
	case 0:
		e.Reason = fmt.Sprintf("%s came after the end of the transcript", r)
	default:
		got := r.lines()
		best, bestN := -1, 0
		for k, l := range pending {
			want := s.expected(l, r)
			ops := linediff.Lines(want, got)
			n := linediff.Changes(ops)
			diff := linediff.Unified(ops, fmt.Sprintf("transcript line %d (recorded, normalised)", l.Num),
				fmt.Sprintf("client line %d (received, normalised)", r.n), 3)
			if best < 0 || n < bestN {
				best, bestN, e.Diff, e.Line = k, n, diff, l.Num
			}
		}
		if len(pending) == 1 {
			e.Reason = fmt.Sprintf("%s does not match transcript %s", r, pending[0])
		} else {
			e.Reason = fmt.Sprintf("%s matches none of the %d client lines due next; the nearest is transcript %s",
				r, len(pending), pending[best])
		}
	}
	if r.kind == kindRequest {
		answer, err := jsonrpc.Bare.Encode(&jsonrpc.Response{ID: r.sentID,
			Error: &jsonrpc.Error{Code: MissCode, Message: AnswerPrefix + e.Error()}})
		if err == nil {
			if werr := s.emit(ctx, answer); werr != nil {
				return errors.Join(e, werr)
			}
		}
	}
	s.trace("%v", e)
	return e
}

// lines renders the received line for a diff.
func (r *received) lines() []string {
	if !r.isJSON {
		return []string{"(not JSON) " + string(r.b)}
	}
	return text(normalise(r.v, nil))
}

// expected renders a recorded client line for a diff against r, with the
// paths it would learn from r.
func (s *server) expected(l *Line, r *received) []string {
	if l.kind == kindRaw {
		want, _ := s.paths.apply(l.raw())
		return []string{"(not JSON) " + want}
	}
	rec, err := decode(l.Msg)
	if err != nil {
		return []string{string(l.Msg)}
	}
	paths := s.paths
	if r.isJSON {
		found := map[string]string{}
		learn(rec, r.v, s.paths, found)
		paths = paths.with(found)
	}
	return text(normalise(rec, paths))
}

// leftover is the error for the client ending its input with pending and
// rest never replayed.
func (s *server) leftover(pending []*Line, rest []Line) error {
	left := slices2(pending, rest)
	e := &LeftoverError{list: summary(left, 10)}
	for _, l := range left {
		e.Lines = append(e.Lines, l.Num)
		if l.Dir == transcript.DirSend {
			e.Sends++
		}
	}
	s.trace("%v", e)
	return e
}

// slices2 joins the pending lines and the rest of the transcript.
func slices2(pending []*Line, rest []Line) []*Line {
	out := append([]*Line(nil), pending...)
	for i := range rest {
		out = append(out, &rest[i])
	}
	return out
}

func (s *server) trace(format string, a ...any) {
	if s.opts.Trace != nil {
		fmt.Fprintf(s.opts.Trace, format+"\n", a...)
	}
}
