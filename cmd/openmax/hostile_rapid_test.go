package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/openmax/openmax/core/wire"
	"github.com/openmax/openmax/provider/clock"
)

// TestRapidHostileStreams is the property test for hostile provider
// streams (issue 9): rapid draws, per attempt, a reply that may never send
// its headers, pause, drip bytes under the idle timeout, stall for good,
// send endless tokens, comments, blank lines or data lines that no blank
// line ends, gzip it all, and cut it into random chunks; the real engine
// and stdio server (run with --stdio) read it on the OpenAI or the
// Anthropic wire through an http.RoundTripper, on a virtual clock. Whatever
// was drawn:
//
//   - the one user command gets exactly one done, the stream passes the
//     wire checker, and the server exits after stdin's EOF;
//   - no attempt delivers more than --max-reply-bytes (plus read-ahead),
//     and the run allocates a bounded amount;
//   - the turn ends within a bounded virtual time (the reply deadline and
//     the backoffs of its attempts) and a bounded wall time.
//
// The default run is a few seconds under -race; -rapid.checks=N searches
// deeper.
func TestRapidHostileStreams(t *testing.T) {
	getenv := trustedEnv(t, testEnv, "/")
	rapid.Check(t, func(rt *rapid.T) {
		w := rapid.SampledFrom([]string{"openai", "anthropic"}).Draw(rt, "wire")
		maxAttempts := rapid.IntRange(1, 3).Draw(rt, "max_attempts")
		var scripts []hostileAttempt
		for i := range maxAttempts {
			scripts = append(scripts, drawAttempt(rt, fmt.Sprintf("attempt%d", i+1)))
		}
		runRapidHostile(rt, getenv, w, maxAttempts, scripts)
	})
}

// The limits every run gets, small so runs stay fast.
const (
	rhIdle     = 30 * time.Second
	rhHeader   = time.Minute
	rhReply    = 5 * time.Minute
	rhMaxBytes = 64 << 10
	rhMaxPause = 3 * rhIdle // the longest single pause drawn
)

// hostileSeg is one stretch of a hostile body.
type hostileSeg struct {
	Kind string        // tokens, data, comments, blanks, pause, finish, eof, reset, endless, drip, stall
	Unit string        // for endless and drip: tokens, data, comments or blanks
	N    int           // how many units
	D    time.Duration // pause length, or the drip's period
}

// hostileAttempt is what the server does with one request.
type hostileAttempt struct {
	NoHeaders   bool          // take the request and never answer
	HeaderPause time.Duration // silence before the headers
	Status      int
	RetryAfter  string
	Gzip        bool
	Chunks      []int // the sizes reads are cut to, in turn
	Segs        []hostileSeg
}

func drawAttempt(rt *rapid.T, label string) hostileAttempt {
	a := hostileAttempt{Status: 200}
	a.NoHeaders = rapid.IntRange(0, 9).Draw(rt, label+"_no_headers") == 0
	if rapid.Bool().Draw(rt, label+"_header_pause") {
		a.HeaderPause = time.Duration(rapid.IntRange(1, int(2*rhHeader/time.Second)).Draw(rt, label+"_header_pause_s")) * time.Second
	}
	switch rapid.IntRange(0, 9).Draw(rt, label+"_status") {
	case 0:
		a.Status = 503
	case 1:
		a.Status, a.RetryAfter = 429, rapid.SampledFrom([]string{"1", "99999999999", "1e20", "Inf", "0x1p62"}).Draw(rt, label+"_retry_after")
	}
	a.Gzip = rapid.IntRange(0, 3).Draw(rt, label+"_gzip") == 0
	a.Chunks = rapid.SliceOfN(rapid.IntRange(1, 4096), 1, 8).Draw(rt, label+"_chunks")
	units := []string{"tokens", "data", "comments", "blanks"}
	n := rapid.IntRange(0, 6).Draw(rt, label+"_segs")
	for i := range n {
		l := fmt.Sprintf("%s_seg%d", label, i)
		s := hostileSeg{Kind: rapid.SampledFrom([]string{"tokens", "data", "comments", "blanks", "pause", "finish", "eof", "reset", "endless", "drip", "stall"}).Draw(rt, l)}
		switch s.Kind {
		case "tokens", "data", "comments", "blanks":
			s.N = rapid.IntRange(1, 200).Draw(rt, l+"_n")
		case "pause":
			s.D = time.Duration(rapid.IntRange(1, int(rhMaxPause/time.Second)).Draw(rt, l+"_s")) * time.Second
		case "endless":
			s.Unit = rapid.SampledFrom(units).Draw(rt, l+"_unit")
		case "drip":
			s.Unit = rapid.SampledFrom(units).Draw(rt, l+"_unit")
			s.D = time.Duration(rapid.IntRange(1, int(rhIdle/time.Second)-1).Draw(rt, l+"_s")) * time.Second
		}
		a.Segs = append(a.Segs, s)
	}
	return a
}

// hostileUnits are one unit of each kind on a wire.
func hostileUnits(w string) (head string, units map[string]string, finish string) {
	units = map[string]string{
		"data":     "data: " + strings.Repeat("d", 60) + "\n",
		"comments": ": keepalive\n",
		"blanks":   "\n",
	}
	if w == "openai" {
		units["tokens"] = `data: {"choices":[{"index":0,"delta":{"content":"tok "}}]}` + "\n\n"
		finish = `data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}` + "\n\ndata: [DONE]\n\n"
		return "", units, finish
	}
	head = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":4,\"output_tokens\":1}}}\n\n"
	units["tokens"] = "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"tok \"}}\n\n"
	finish = "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":3}}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
	return head, units, finish
}

// hostileTransport serves the drawn attempts in order (the last one again
// if more are sent) on a fake clock: silence is virtual time passing,
// which the body moves on itself.
type hostileTransport struct {
	clk     *clock.Fake
	wire    string
	scripts []hostileAttempt

	mu        sync.Mutex
	attempts  int
	inFlight  int
	idle      chan struct{} // closed while no request is in flight
	delivered []int64       // body bytes delivered per attempt
}

func newHostileTransport(clk *clock.Fake, w string, scripts []hostileAttempt) *hostileTransport {
	t := &hostileTransport{clk: clk, wire: w, scripts: scripts, idle: make(chan struct{})}
	close(t.idle)
	return t
}

func (t *hostileTransport) begin() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.inFlight == 0 {
		t.idle = make(chan struct{})
	}
	t.inFlight++
	t.attempts++
	t.delivered = append(t.delivered, 0)
	return t.attempts - 1
}

func (t *hostileTransport) end() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.inFlight--
	if t.inFlight == 0 {
		close(t.idle)
	}
}

// whenIdle is closed while no request is in flight.
func (t *hostileTransport) whenIdle() <-chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.idle
}

// silence lets d of virtual time pass, or, with d < 0, lets time pass
// for good, a second at a time whenever the harness waits on the clock,
// until the request is given up.
func (t *hostileTransport) silence(ctx context.Context, d time.Duration) error {
	if d >= 0 {
		t.clk.Advance(d)
		return ctx.Err()
	}
	for ctx.Err() == nil {
		if t.clk.BlockUntil(ctx, 1) != nil {
			break
		}
		t.clk.Advance(time.Second)
	}
	return ctx.Err()
}

func (t *hostileTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	io.Copy(io.Discard, req.Body)
	req.Body.Close()
	n := t.begin()
	a := t.scripts[min(n, len(t.scripts)-1)]
	ctx := req.Context()
	if a.NoHeaders {
		t.silence(ctx, -1)
		t.end()
		return nil, ctx.Err()
	}
	if err := t.silence(ctx, a.HeaderPause); err != nil {
		t.end()
		return nil, err
	}
	h := http.Header{"Content-Type": {"text/event-stream"}}
	if a.Status != 200 {
		h = http.Header{"Content-Type": {"application/json"}}
		if a.RetryAfter != "" {
			h.Set("Retry-After", a.RetryAfter)
		}
		a.Segs = []hostileSeg{{Kind: "endless", Unit: "blanks"}} // an error body that never ends
		a.Gzip = false
	}
	if a.Gzip {
		h.Set("Content-Encoding", "gzip")
	}
	head, units, finish := hostileUnits(t.wire)
	b := &hostileBody{t: t, n: n, ctx: ctx, a: a, units: units, finish: finish}
	if a.Status == 200 {
		b.plain.WriteString(head)
	}
	if a.Gzip {
		b.zw = gzip.NewWriter(&b.out)
	}
	return &http.Response{StatusCode: a.Status, Status: strconv.Itoa(a.Status), Header: h, Body: b, Request: req,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, ContentLength: -1}, nil
}

// hostileBody produces an attempt's body as it is read.
type hostileBody struct {
	t      *hostileTransport
	n      int
	ctx    context.Context
	a      hostileAttempt
	units  map[string]string
	finish string

	plain  bytes.Buffer // produced, not yet compressed
	out    bytes.Buffer // ready to deliver
	zw     *gzip.Writer
	seg    int
	rep    int // units of the current segment produced
	chunk  int
	err    error
	closed sync.Once
}

// produce moves the body on by one step: some bytes, a silence, or its
// end.
func (b *hostileBody) produce() error {
	if b.seg >= len(b.a.Segs) {
		return io.EOF // the end of the script: a clean EOF
	}
	s := b.a.Segs[b.seg]
	next := func() { b.seg, b.rep = b.seg+1, 0 }
	switch s.Kind {
	case "tokens", "data", "comments", "blanks":
		b.plain.WriteString(strings.Repeat(b.units[s.Kind], s.N))
		next()
	case "finish":
		b.plain.WriteString(b.finish)
		next()
	case "pause":
		next()
		return b.t.silence(b.ctx, s.D)
	case "eof":
		return io.EOF
	case "reset":
		return errors.New("connection reset by peer")
	case "stall":
		return b.t.silence(b.ctx, -1)
	case "endless":
		b.plain.WriteString(strings.Repeat(b.units[s.Unit], 64))
	case "drip":
		if b.rep > 0 {
			if err := b.t.silence(b.ctx, s.D); err != nil {
				return err
			}
		}
		b.rep++
		b.plain.WriteString(b.units[s.Unit])
	}
	return nil
}

func (b *hostileBody) Read(p []byte) (int, error) {
	for b.out.Len() == 0 {
		if err := b.ctx.Err(); err != nil {
			return 0, err
		}
		if b.err != nil {
			return 0, b.err
		}
		err := b.produce()
		if b.zw != nil && b.plain.Len() > 0 {
			b.zw.Write(b.plain.Bytes())
			b.zw.Flush()
			b.plain.Reset()
		} else {
			b.out.Write(b.plain.Bytes())
			b.plain.Reset()
		}
		if err != nil {
			if errors.Is(err, io.EOF) && b.zw != nil {
				b.zw.Close()
			}
			b.err = err
		}
	}
	size := b.a.Chunks[b.chunk%len(b.a.Chunks)]
	b.chunk++
	k, _ := b.out.Read(p[:min(len(p), size)])
	b.t.mu.Lock()
	b.t.delivered[b.n] += int64(k)
	b.t.mu.Unlock()
	return k, nil
}

func (b *hostileBody) Close() error {
	b.closed.Do(b.t.end)
	return nil
}

func runRapidHostile(rt *rapid.T, getenv func(string) string, w string, maxAttempts int, scripts []hostileAttempt) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	fake := clock.NewFake(start)
	tr := newHostileTransport(fake, w, scripts)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// Backoffs: when the harness waits on the clock and no request is in
	// flight, it is between attempts, and time passes.
	go func() {
		for ctx.Err() == nil {
			select {
			case <-ctx.Done():
				return
			case <-tr.whenIdle():
			}
			if fake.BlockUntil(ctx, 1) != nil {
				return
			}
			select {
			case <-tr.whenIdle():
				fake.Advance(250 * time.Millisecond)
			default:
			}
		}
	}()
	args := []string{"--stdio", "--session-id", "s1", "--project", "/", "--provider", w, "--base-url", "http://hostile.invalid",
		"--max-attempts", strconv.Itoa(maxAttempts),
		"--idle-timeout", rhIdle.String(), "--header-timeout", rhHeader.String(), "--reply-timeout", rhReply.String(),
		"--max-reply-bytes", strconv.Itoa(rhMaxBytes)}
	stdin := `{"cmd":"user","text":"go"}` + "\n"
	var stdout, stderr syncBuffer
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	wallStart := time.Now()
	codec := make(chan int, 1)
	go func() {
		codec <- run(ctx, args, strings.NewReader(stdin), &stdout, &stderr, env{clock: fake, transport: tr, getenv: getenv, seed: 1})
	}()
	var code int
	select {
	case code = <-codec:
	case <-ctx.Done():
		rt.Fatalf("no exit within 20s after stdin's EOF (virtual %v); stdout:\n%s\nstderr:\n%s", fake.Now().Sub(start), stdout.String(), stderr.String())
	}
	wall := time.Since(wallStart)
	var after runtime.MemStats
	runtime.ReadMemStats(&after)

	out := stdout.String()
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	dones, errorLines := 0, 0
	stop := ""
	for _, l := range lines {
		var ev struct {
			Type       string `json:"type"`
			StopReason string `json:"stop_reason"`
		}
		if err := json.Unmarshal([]byte(l), &ev); err != nil {
			rt.Fatalf("stdout line %q: %v", l, err)
		}
		switch ev.Type {
		case "done":
			dones++
			stop = ev.StopReason
		case "error":
			errorLines++
		case "tool_start":
			rt.Fatalf("a tool ran: %s", l)
		}
	}
	if dones != 1 {
		rt.Fatalf("%d done lines, want exactly one:\n%s\nstderr:\n%s", dones, out, stderr.String())
	}
	finished := stop == "stop" || stop == "end_turn" // the vendor's own reason, passed through
	if !finished && stop != wire.StopTruncated && stop != wire.StopError {
		rt.Fatalf("done %s", stop)
	}
	if !finished && errorLines == 0 {
		rt.Fatalf("done %s with no error line:\n%s", stop, out)
	}
	if finished && !strings.Contains(fmt.Sprint(scripts), "finish") {
		rt.Fatalf("done %s, but no attempt sent a completion", stop)
	}
	if want := map[string]int{wire.StopError: 1}[stop]; code != want {
		rt.Fatalf("exit %d after done %s, want %d", code, stop, want)
	}
	c := wire.NewChecker(wire.Strict())
	c.SetInput([]byte(stdin))
	if _, err := c.Stream(strings.NewReader(out), func(v wire.Verdict) {
		if v.Err != nil {
			rt.Fatalf("checker, line %d: %v\n%s", v.Line, v.Err, out)
		}
	}); err != nil {
		rt.Fatal(err)
	}
	// Bounded bytes: no attempt got past the cap (by more than the
	// transport's read-ahead), and the run allocated a bounded amount.
	tr.mu.Lock()
	delivered := append([]int64(nil), tr.delivered...)
	tr.mu.Unlock()
	for i, n := range delivered {
		if n > rhMaxBytes+64<<10 {
			rt.Fatalf("attempt %d delivered %d bytes, over the %d cap", i+1, n, rhMaxBytes)
		}
	}
	if len(delivered) > maxAttempts {
		rt.Fatalf("%d attempts, over --max-attempts %d", len(delivered), maxAttempts)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 64<<20 {
		rt.Fatalf("the run allocated %d MiB", alloc>>20)
	}
	// Bounded time: each attempt ends by its reply deadline (overshot by
	// at most one drawn silence), each backoff by the retry policy's 30s
	// ceiling or an honoured Retry-After of at most a minute.
	virtual := fake.Now().Sub(start)
	rt.Logf("%s: done %s after %d attempt(s), %v virtual, %v wall, %d KiB allocated", w, stop, len(delivered), virtual, wall, (after.TotalAlloc-before.TotalAlloc)>>10)
	if limit := time.Duration(maxAttempts)*(rhReply+rhMaxPause+time.Second) + time.Duration(maxAttempts-1)*(time.Minute+time.Second); virtual > limit {
		rt.Fatalf("the turn took %v of virtual time, over %v", virtual, limit)
	}
	if wall > 10*time.Second {
		rt.Fatalf("the turn took %v of wall time", wall)
	}
}
