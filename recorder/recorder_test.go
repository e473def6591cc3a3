package recorder

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	vcr "github.com/dnaeon/go-vcr/v2/cassette"

	"github.com/openmax/openmax/core/harness"
	"github.com/openmax/openmax/internal/gettest"
	"github.com/openmax/openmax/provider/clock"
	"github.com/openmax/openmax/recorder/cassette"
)

// guard bounds every wait on another goroutine, so a broken recorder fails
// a test instead of hanging it. Nothing is sequenced by it.
const guard = 10 * time.Second

var t0 = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

// rig is a recorder on a fake clock with a fresh transport.
type rig struct {
	path   string
	clk    *clock.Fake
	rec    *Recorder
	client *http.Client
}

func newRig(t *testing.T, scrub ...*regexp.Regexp) *rig {
	t.Helper()
	return newRigWith(t, Options{Scrub: scrub})
}

// newRigWith is newRig with more options (its path, transport and clock
// are the rig's).
func newRigWith(t *testing.T, o Options) *rig {
	t.Helper()
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	g := &rig{path: filepath.Join(t.TempDir(), "c.yaml"), clk: clock.NewFake(t0)}
	o.Path, o.Transport, o.Clock = g.path, tr, g.clk
	rec, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	g.rec = rec
	g.client = &http.Client{Transport: rec}
	return g
}

// load reads the cassette on disk.
func (g *rig) load(t *testing.T) *cassette.File {
	t.Helper()
	f, err := cassette.Load(g.path)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// post sends a JSON body through the recorder and reads the whole reply.
func (g *rig) post(t *testing.T, url, body string) {
	t.Helper()
	resp, err := g.client.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	io.ReadAll(resp.Body)
	resp.Body.Close()
}

// wait receives from ch within the guard; for server handlers, which must
// not call t.Fatal. It gives up quietly when the client has gone (ctx).
func wait(t *testing.T, ctx context.Context, ch <-chan struct{}, what string) bool {
	select {
	case <-ch:
		return true
	case <-ctx.Done():
		return false
	case <-time.After(guard):
		t.Errorf("gave up waiting for %s", what)
		return false
	}
}

// send hands ch a value within the guard.
func send(t *testing.T, ch chan<- struct{}, what string) {
	t.Helper()
	select {
	case ch <- struct{}{}:
	case <-time.After(guard):
		t.Fatalf("gave up waiting to %s", what)
	}
}

// within runs f and fails the test if it does not return within the guard
// (a read that blocks when its bytes have arrived).
func within[T any](t *testing.T, what string, f func() T) T {
	t.Helper()
	ch := make(chan T, 1)
	go func() { ch <- f() }()
	select {
	case v := <-ch:
		return v
	case <-time.After(guard):
		t.Fatalf("%s: blocked", what)
		panic("unreachable")
	}
}

type readResult struct {
	data []byte
	err  error
}

// readExactly reads n bytes of body.
func readExactly(t *testing.T, body io.Reader, n int) string {
	t.Helper()
	r := within(t, "reading what has arrived", func() readResult {
		buf := make([]byte, n)
		_, err := io.ReadFull(body, buf)
		return readResult{buf, err}
	})
	if r.err != nil {
		t.Fatalf("read: %v", r.err)
	}
	return string(r.data)
}

// byOffset groups the recorded bytes by arrival offset.
func byOffset(chunks []cassette.Chunk) map[time.Duration]string {
	m := map[time.Duration]string{}
	for _, c := range chunks {
		m[c.At] += c.Data
	}
	return m
}

// stepServer streams parts, sending each when the test steps it.
func stepServer(t *testing.T, parts ...string) (*httptest.Server, chan struct{}) {
	step := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		http.NewResponseController(w).Flush() //nolint:errcheck
		for i, p := range parts {
			if !wait(t, r.Context(), step, fmt.Sprintf("step %d", i+1)) {
				return
			}
			io.WriteString(w, p)
			http.NewResponseController(w).Flush() //nolint:errcheck
		}
	}))
	t.Cleanup(srv.Close)
	return srv, step
}

func TestStreamPassesThroughAsItArrives(t *testing.T) {
	srv, step := stepServer(t, "data: 1\n\n", "data: 2\n\n")
	g := newRig(t)
	g.clk.Advance(2 * time.Second)

	// The response comes back with its headers, before any of the body.
	resp := within(t, "RoundTrip", func() *http.Response {
		resp, err := g.client.Get(srv.URL + "/stream")
		if err != nil {
			t.Error(err)
		}
		return resp
	})
	if resp == nil {
		t.FailNow()
	}
	defer resp.Body.Close()

	g.clk.Advance(100 * time.Millisecond)
	send(t, step, "release chunk 1")
	// Chunk 2 is not released: a recorder that buffered would block here.
	if got := readExactly(t, resp.Body, len("data: 1\n\n")); got != "data: 1\n\n" {
		t.Fatalf("chunk 1: %q", got)
	}
	if n := len(g.load(t).Interactions); n != 0 {
		t.Fatalf("an open interaction was saved: %d", n)
	}

	g.clk.Advance(250 * time.Millisecond)
	send(t, step, "release chunk 2")
	rest := within(t, "reading to the end", func() readResult {
		b, err := io.ReadAll(resp.Body)
		return readResult{b, err}
	})
	if rest.err != nil || string(rest.data) != "data: 2\n\n" {
		t.Fatalf("rest: %q %v", rest.data, rest.err)
	}

	f := g.load(t)
	if len(f.Interactions) != 1 {
		t.Fatalf("%d interactions", len(f.Interactions))
	}
	it := f.Interactions[0]
	if it.Request.Method != "GET" || it.Request.URL != srv.URL+"/stream" {
		t.Errorf("request: %+v", it.Request)
	}
	if it.Response.Code != 200 || it.Response.Status != "200 OK" || it.Response.Headers.Get("Content-Type") != "text/event-stream" {
		t.Errorf("response: %+v", it.Response)
	}
	if it.Response.Body != "data: 1\n\ndata: 2\n\n" {
		t.Errorf("body: %q", it.Response.Body)
	}
	if it.Stream == nil || it.Stream.Start != 2*time.Second || it.Stream.Error != nil {
		t.Fatalf("stream: %+v", it.Stream)
	}
	want := map[time.Duration]string{100 * time.Millisecond: "data: 1\n\n", 350 * time.Millisecond: "data: 2\n\n"}
	if got := byOffset(it.Stream.Chunks); !reflect.DeepEqual(got, want) {
		t.Errorf("chunks by offset: %q", got)
	}
	if it.Response.Duration != 350*time.Millisecond {
		t.Errorf("duration %v", it.Response.Duration)
	}
}

// cutServer sends the headers and the first part of a body promising more,
// waits until the test has seen it, then kills the connection: with a TCP
// reset (SO_LINGER 0), or a plain close.
func cutServer(t *testing.T, reset bool, seen <-chan struct{}) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, buf, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Errorf("hijack: %v", err)
			return
		}
		defer conn.Close()
		fmt.Fprintf(buf, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: 1000\r\n\r\ndata: partial\n\n")
		buf.Flush()
		if !wait(t, r.Context(), seen, "the client to see the first chunk") {
			return
		}
		if reset {
			if tc, ok := conn.(*net.TCPConn); ok {
				tc.SetLinger(0)
			}
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestBodyCutMidwayIsRecorded(t *testing.T) {
	for _, tt := range []struct {
		name  string
		reset bool
		want  error
		kind  string
	}{
		{"reset", true, syscall.ECONNRESET, cassette.KindReset},
		{"eof", false, io.ErrUnexpectedEOF, cassette.KindEOF},
	} {
		t.Run(tt.name, func(t *testing.T) {
			seen := make(chan struct{})
			srv := cutServer(t, tt.reset, seen)
			g := newRig(t)
			resp, err := g.client.Get(srv.URL)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if got := readExactly(t, resp.Body, len("data: partial\n\n")); got != "data: partial\n\n" {
				t.Fatalf("first chunk: %q", got)
			}
			g.clk.Advance(time.Second)
			close(seen)
			r := within(t, "reading the cut", func() readResult {
				b, err := io.ReadAll(resp.Body)
				return readResult{b, err}
			})
			if !errors.Is(r.err, tt.want) || len(r.data) != 0 {
				t.Fatalf("the client got %q, %v; want %v", r.data, r.err, tt.want)
			}
			f := g.load(t)
			if len(f.Interactions) != 1 {
				t.Fatalf("%d interactions", len(f.Interactions))
			}
			it := f.Interactions[0]
			if it.Response.Code != 200 || it.Response.Body != "data: partial\n\n" || it.Response.Headers.Get("Content-Length") != "1000" {
				t.Errorf("response: %+v", it.Response)
			}
			want := []cassette.Chunk{{At: 0, Data: "data: partial\n\n"}}
			if !reflect.DeepEqual(it.Stream.Chunks, want) {
				t.Errorf("chunks: %+v", it.Stream.Chunks)
			}
			if e := it.Stream.Error; e == nil || e.Kind != tt.kind || e.At != time.Second || e.Message != r.err.Error() {
				t.Errorf("error: %+v (the client got %v)", e, r.err)
			}
			if it.Response.Duration != time.Second {
				t.Errorf("duration %v", it.Response.Duration)
			}
		})
	}
}

func TestRefusedIsRecordedWithoutResponse(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	g := newRig(t)
	g.clk.Advance(time.Second)
	req, _ := http.NewRequest("POST", "http://"+addr+"/v1/messages", strings.NewReader(`{"model":"m"}`))
	resp, err := g.rec.RoundTrip(req)
	if resp != nil || !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("got %v, %v", resp, err)
	}
	var op *net.OpError
	if !errors.As(err, &op) || op.Op != "dial" {
		t.Errorf("the error was changed: %#v", err)
	}
	f := g.load(t)
	if len(f.Interactions) != 1 {
		t.Fatalf("%d interactions", len(f.Interactions))
	}
	it := f.Interactions[0]
	if it.Request.Method != "POST" || it.Request.Body != `{"model":"m"}` || it.Request.URL != "http://"+addr+"/v1/messages" {
		t.Errorf("request: %+v", it.Request)
	}
	if it.Response.Code != 0 || it.Response.Body != "" || len(it.Stream.Chunks) != 0 || it.Stream.Start != time.Second {
		t.Errorf("response: %+v, stream %+v", it.Response, it.Stream)
	}
	if e := it.Stream.Error; e == nil || e.Kind != cassette.KindRefused || e.Message != err.Error() {
		t.Errorf("error: %+v", e)
	}
}

func TestSecretsNeverReachTheFile(t *testing.T) {
	secrets := []string{"sk-secret-111111", "sk-ant-secret-2222", "AIzaSyKEYsecret3", "user-secret-4", "user-secret-5", "user-sec", "cookie-secret-6", "hunter2-password"}
	step := make(chan struct{})
	var mu sync.Mutex
	var live *http.Request
	var liveBody []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		live, liveBody = r, b
		mu.Unlock()
		w.Header().Set("Set-Cookie", "session=cookie-secret-6")
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, `data: {"echo":"user-sec`)
		http.NewResponseController(w).Flush() //nolint:errcheck
		if wait(t, r.Context(), step, "the second half") {
			io.WriteString(w, `ret-5 and more"}`+"\n\n")
		}
	}))
	defer srv.Close()
	g := newRig(t, regexp.MustCompile(`user-secret-\d`))

	newReq := func() *http.Request {
		u := strings.Replace(srv.URL, "http://", "http://me:hunter2-password@", 1) + "/v1/models/g:stream?alt=sse&key=AIzaSyKEYsecret3"
		body := `{"prompt":"my user-secret-4 here","echo":"sk-secret-111111"}`
		req, err := http.NewRequest("POST", u, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer sk-secret-111111")
		req.Header.Set("X-Api-Key", "sk-ant-secret-2222")
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Trace", "keep me")
		return req
	}
	resp, err := g.client.Do(newReq())
	if err != nil {
		t.Fatal(err)
	}
	first := `data: {"echo":"user-sec`
	if got := readExactly(t, resp.Body, len(first)); got != first {
		t.Fatalf("first: %q", got)
	}
	g.clk.Advance(time.Second)
	send(t, step, "release the second half")
	rest, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || string(rest) != `ret-5 and more"}`+"\n\n" {
		t.Fatalf("rest %q %v", rest, err)
	}
	// The live exchange is untouched.
	mu.Lock()
	if live.Header.Get("Authorization") != "Bearer sk-secret-111111" || live.URL.Query().Get("key") != "AIzaSyKEYsecret3" || !bytes.Contains(liveBody, []byte("user-secret-4")) {
		t.Errorf("the live request was scrubbed: %v %v %s", live.Header, live.URL, liveBody)
	}
	mu.Unlock()
	if resp.Header.Get("Set-Cookie") != "session=cookie-secret-6" {
		t.Errorf("the live response was scrubbed: %v", resp.Header)
	}

	data, err := os.ReadFile(g.path)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range secrets {
		if bytes.Contains(data, []byte(s)) {
			t.Errorf("%q is in the file:\n%s", s, data)
		}
	}
	it := g.load(t).Interactions[0]
	rq := it.Request
	if !strings.HasSuffix(rq.URL, "/v1/models/g:stream?alt=sse&key=[scrubbed]") || rq.Headers.Get("Authorization") != Scrubbed || rq.Headers.Get("X-Api-Key") != Scrubbed || rq.Headers.Get("X-Trace") != "keep me" {
		t.Errorf("request: %+v", rq)
	}
	if rq.Body != `{"prompt":"my [scrubbed] here","echo":"[scrubbed]"}` {
		t.Errorf("request body: %s", rq.Body)
	}
	if it.Response.Headers.Get("Set-Cookie") != Scrubbed {
		t.Errorf("response headers: %v", it.Response.Headers)
	}
	// The secret split across two reads is found; the cut moves to where
	// its replacement starts.
	want := []cassette.Chunk{{At: 0, Data: `data: {"echo":"`}, {At: time.Second, Data: `[scrubbed] and more"}` + "\n\n"}}
	if !reflect.DeepEqual(it.Stream.Chunks, want) {
		t.Errorf("chunks: %q", it.Stream.Chunks)
	}

	// A replayer scrubbing the same live request gets the recorded one.
	got, err := ScrubRequest(newReq(), g.rec.patterns)
	if err != nil {
		t.Fatal(err)
	}
	if got.Method != rq.Method || got.URL != rq.URL || got.Body != rq.Body || !reflect.DeepEqual(got.Headers, rq.Headers) {
		t.Errorf("ScrubRequest gives\n%+v\nthe cassette holds\n%+v", got, rq)
	}
	again := newReq()
	againBody, _ := io.ReadAll(again.Body)
	u, h, b := ScrubFunc(g.rec.patterns)(again.Method, again.URL.String(), again.Header.Clone(), againBody)
	if u != rq.URL || string(b) != rq.Body || !reflect.DeepEqual(h, rq.Headers) {
		t.Errorf("ScrubFunc gives %s %v %s", u, h, b)
	}
}

func TestCassetteLoadsWithStockGoVCR(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "hello\nworld")
	}))
	defer srv.Close()
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	dead := "http://" + l.Addr().String()
	l.Close()

	g := newRig(t)
	g.post(t, srv.URL+"/a", `{"x":1}`)
	if _, err := g.client.Get(dead); err == nil {
		t.Fatal("the dead endpoint answered")
	}
	cfg := harness.Defaults()
	cfg.Provider, cfg.Model = "openai", "gpt-test"
	sess := &cassette.Session{SessionID: "s1", Seed: 7, Config: &cfg, Commands: []cassette.Command{{AfterLines: 0, Line: `{"op":"hi"}`}}}
	if err := g.rec.SetSession(sess); err != nil {
		t.Fatal(err)
	}
	if err := g.rec.Close(); err != nil {
		t.Fatal(err)
	}

	stock, err := vcr.Load(strings.TrimSuffix(g.path, ".yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(stock.Interactions) != 2 {
		t.Fatalf("stock go-vcr sees %d interactions", len(stock.Interactions))
	}
	a := stock.Interactions[0]
	if a.Request.Method != "POST" || a.Request.URL != srv.URL+"/a" || a.Request.Body != `{"x":1}` || a.Response.Body != "hello\nworld" || a.Response.Code != 200 || a.Response.Headers.Get("Content-Length") != "11" {
		t.Errorf("stock go-vcr reads %+v", a)
	}
	if stock.Interactions[1].Response.Code != 0 || stock.Interactions[1].Request.URL != dead {
		t.Errorf("stock go-vcr reads %+v", stock.Interactions[1])
	}

	f := g.load(t)
	if len(f.Interactions) != 2 || !reflect.DeepEqual(f.Session, sess) {
		t.Errorf("ours reads %d interactions, session %+v", len(f.Interactions), f.Session)
	}
	data, err := os.ReadFile(g.path)
	if err != nil {
		t.Fatal(err)
	}
	snapshot, err := g.rec.Cassette()
	if err != nil {
		t.Fatal(err)
	}
	if snap, err := snapshot.Marshal(); err != nil || !bytes.Equal(snap, data) {
		t.Errorf("Cassette() is not what the file holds: %v\n%s\n---\n%s", err, snap, data)
	}
}

func TestCompletedInteractionIsOnDiskWhileTheNextStreams(t *testing.T) {
	srv, step := stepServer(t, "data: one\n\n", "data: two\n\n")
	g := newRig(t)
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "first") }))
	defer plain.Close()

	resp, err := g.client.Get(plain.URL)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := io.ReadAll(resp.Body); string(b) != "first" {
		t.Fatalf("first: %q", b)
	}
	resp.Body.Close()

	resp, err = g.client.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	send(t, step, "release chunk 1")
	readExactly(t, resp.Body, len("data: one\n\n"))

	// "Crash" now: the file holds the first interaction, whole.
	f := g.load(t)
	if len(f.Interactions) != 1 || f.Interactions[0].Response.Body != "first" || f.Interactions[0].Request.URL != plain.URL {
		t.Fatalf("on disk mid-stream: %+v", f.Interactions)
	}
	if _, err := vcr.Load(strings.TrimSuffix(g.path, ".yaml")); err != nil {
		t.Fatal(err)
	}

	send(t, step, "release chunk 2")
	io.ReadAll(resp.Body)
	if f := g.load(t); len(f.Interactions) != 2 || f.Interactions[1].Response.Body != "data: one\n\ndata: two\n\n" {
		t.Fatalf("after: %+v", f.Interactions)
	}
}

// TestConcurrentRequestsKeepStartOrder: a request that completes before
// one that started earlier is appended as it completes (the file is not
// rewritten: the same file, every byte of it kept), and Close lists the
// interactions in the order their requests started.
func TestConcurrentRequestsKeepStartOrder(t *testing.T) {
	entered, releaseA := make(chan struct{}), make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/a" {
			close(entered)
			if !wait(t, r.Context(), releaseA, "release of /a") {
				return
			}
		}
		io.WriteString(w, "reply "+r.URL.Path)
	}))
	defer srv.Close()
	g := newRig(t)

	done := make(chan string, 1)
	go func() {
		resp, err := g.client.Get(srv.URL + "/a")
		if err != nil {
			done <- err.Error()
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		done <- string(b)
	}()
	if !wait(t, context.Background(), entered, "/a to reach the server") {
		t.FailNow()
	}
	g.clk.Advance(time.Second)
	resp, err := g.client.Get(srv.URL + "/b")
	if err != nil {
		t.Fatal(err)
	}
	io.ReadAll(resp.Body)
	resp.Body.Close()
	if f := g.load(t); len(f.Interactions) != 1 || f.Interactions[0].Request.URL != srv.URL+"/b" {
		t.Fatalf("with /a open: %+v", f.Interactions)
	}
	opened, err := os.Stat(g.path)
	if err != nil {
		t.Fatal(err)
	}
	withB, err := os.ReadFile(g.path)
	if err != nil {
		t.Fatal(err)
	}
	bEnd := bytes.Index(withB, []byte("\n...\n")) // the document, up to its end line
	if bEnd < 0 {
		t.Fatalf("no end line in the working file:\n%s", withB)
	}

	g.clk.Advance(time.Second)
	close(releaseA)
	select {
	case s := <-done:
		if s != "reply /a" {
			t.Fatalf("/a: %s", s)
		}
	case <-time.After(guard):
		t.Fatal("/a never finished")
	}
	f := g.load(t)
	if len(f.Interactions) != 2 || f.Interactions[0].Request.URL != srv.URL+"/b" || f.Interactions[1].Request.URL != srv.URL+"/a" {
		t.Fatalf("while recording, want /b then /a (the order they completed in): %+v", f.Interactions)
	}
	after, err := os.ReadFile(g.path)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(g.path); err != nil || !os.SameFile(fi, opened) || !bytes.HasPrefix(after, withB[:bEnd]) {
		t.Fatalf("the file was rewritten for /a (%v)", err)
	}
	if err := g.rec.Close(); err != nil {
		t.Fatal(err)
	}
	f = g.load(t)
	if len(f.Interactions) != 2 {
		t.Fatalf("%d interactions", len(f.Interactions))
	}
	a, b := f.Interactions[0], f.Interactions[1]
	if a.Request.URL != srv.URL+"/a" || a.Stream.Start != 0 || a.Response.Duration != 2*time.Second || a.Response.Body != "reply /a" {
		t.Errorf("first: %+v %+v", a.Request, a.Stream)
	}
	if b.Request.URL != srv.URL+"/b" || b.Stream.Start != time.Second || b.Response.Body != "reply /b" {
		t.Errorf("second: %+v %+v", b.Request, b.Stream)
	}
}

func TestProxyPassesTheStreamThroughUnchanged(t *testing.T) {
	parts := []string{"event: a\r\ndata: {\"x\":\"é\"}\r\n\r\n", "data: [1,\n", "2]\n\nno trailing newline"}
	step := make(chan struct{})
	var mu sync.Mutex
	var gotAuth, gotPath, gotHost string
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		gotAuth, gotPath, gotHost = r.Header.Get("Authorization"), r.URL.Path, r.Host
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		http.NewResponseController(w).Flush() //nolint:errcheck
		for i, p := range parts {
			if !wait(t, r.Context(), step, fmt.Sprintf("part %d", i)) {
				return
			}
			io.WriteString(w, p)
			http.NewResponseController(w).Flush() //nolint:errcheck
		}
	}))
	defer upstream.Close()
	up, _ := url.Parse(upstream.URL + "/v1")
	g := newRig(t)
	proxy := httptest.NewServer(NewProxy(up, g.rec))
	defer proxy.Close()

	req, _ := http.NewRequest("POST", proxy.URL+"/chat/completions", strings.NewReader(`{"stream":true}`))
	req.Header.Set("Authorization", "Bearer sk-proxy-secret")
	resp, err := (&http.Client{Transport: &http.Transport{}}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var got strings.Builder
	for i, p := range parts {
		g.clk.Advance(time.Second)
		send(t, step, fmt.Sprintf("release part %d", i))
		// Each part reaches the client before the next is sent.
		got.WriteString(readExactly(t, resp.Body, len(p)))
	}
	rest, err := io.ReadAll(resp.Body)
	if err != nil || len(rest) != 0 {
		t.Fatalf("after the parts: %q %v", rest, err)
	}
	whole := strings.Join(parts, "")
	if got.String() != whole {
		t.Fatalf("the client got %q", got.String())
	}
	mu.Lock()
	if gotAuth != "Bearer sk-proxy-secret" || gotPath != "/v1/chat/completions" || gotHost != up.Host {
		t.Errorf("upstream saw %q %q %q", gotAuth, gotPath, gotHost)
	}
	mu.Unlock()

	// The proxy read the upstream body to its end (and so completed the
	// recording) before it ended the client's.
	f := g.load(t)
	if len(f.Interactions) != 1 {
		t.Fatalf("%d interactions", len(f.Interactions))
	}
	it := f.Interactions[0]
	if it.Request.URL != upstream.URL+"/v1/chat/completions" || it.Request.Body != `{"stream":true}` || it.Request.Headers.Get("Authorization") != Scrubbed {
		t.Errorf("request: %+v", it.Request)
	}
	if it.Response.Body != whole || it.Response.Code != 200 || it.Stream.Error != nil {
		t.Errorf("response: %+v, error %+v", it.Response, it.Stream.Error)
	}
	want := map[time.Duration]string{time.Second: parts[0], 2 * time.Second: parts[1], 3 * time.Second: parts[2]}
	if got := byOffset(it.Stream.Chunks); !reflect.DeepEqual(got, want) {
		t.Errorf("chunks: %q", got)
	}
}

func TestClientCancelAndClose(t *testing.T) {
	for _, tt := range []struct {
		name string
		stop func(cancel context.CancelFunc, body io.ReadCloser)
		msg  string
	}{
		{"context", func(cancel context.CancelFunc, body io.ReadCloser) {
			cancel()
			if _, err := io.ReadAll(body); !errors.Is(err, context.Canceled) {
				t.Errorf("read after cancel: %v", err)
			}
		}, "context canceled"},
		{"close", func(cancel context.CancelFunc, body io.ReadCloser) { body.Close() }, "closed by the client before the end"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv, step := stepServer(t, "data: 1\n\n", "data: 2\n\n")
			g := newRig(t)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL, nil)
			resp, err := g.client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			send(t, step, "release chunk 1")
			readExactly(t, resp.Body, len("data: 1\n\n"))
			g.clk.Advance(time.Second)
			tt.stop(cancel, resp.Body)
			it := g.load(t).Interactions[0]
			if e := it.Stream.Error; e == nil || e.Kind != cassette.KindCancel || !strings.Contains(e.Message, tt.msg) || e.At != time.Second {
				t.Errorf("error: %+v", e)
			}
			if it.Response.Body != "data: 1\n\n" {
				t.Errorf("body: %q", it.Response.Body)
			}
		})
	}
}

func TestCloseFinishesOpenInteractions(t *testing.T) {
	srv, step := stepServer(t, "data: 1\n\n", "data: 2\n\n")
	g := newRig(t)
	resp, err := g.client.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	send(t, step, "release chunk 1")
	readExactly(t, resp.Body, len("data: 1\n\n"))
	g.clk.Advance(time.Second)
	if err := g.rec.Close(); err != nil {
		t.Fatal(err)
	}
	it := g.load(t).Interactions[0]
	if e := it.Stream.Error; e == nil || e.Kind != cassette.KindCancel || it.Response.Body != "data: 1\n\n" || it.Response.Duration != time.Second {
		t.Errorf("after Close: %+v %+v", it.Response, e)
	}
	if _, err := g.client.Get(srv.URL); !errors.Is(err, ErrClosed) {
		t.Errorf("after Close: %v", err)
	}
	// The open body still passes through, unrecorded.
	send(t, step, "release chunk 2")
	if b, err := io.ReadAll(resp.Body); string(b) != "data: 2\n\n" || err != nil {
		t.Errorf("rest: %q %v", b, err)
	}
	if f := g.load(t); len(f.Interactions) != 1 || f.Interactions[0].Response.Body != "data: 1\n\n" {
		t.Errorf("the file changed after Close: %+v", f.Interactions)
	}
}

func TestDecodedGzipIsSelfConsistent(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var b bytes.Buffer
		z := gzip.NewWriter(&b)
		io.WriteString(z, `{"decoded":true}`)
		z.Close()
		w.Header().Set("Content-Encoding", "gzip")
		w.Header().Set("Content-Length", fmt.Sprint(b.Len()))
		w.Write(b.Bytes())
	}))
	defer srv.Close()
	g := newRig(t)
	resp, err := g.client.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != `{"decoded":true}` {
		t.Fatalf("client read %q", b)
	}
	it := g.load(t).Interactions[0]
	if it.Response.Body != `{"decoded":true}` || it.Response.Headers.Get("Content-Encoding") != "" || it.Response.Headers.Get("Content-Length") != "" || it.Stream.Error != nil {
		t.Errorf("recorded %+v", it.Response)
	}
}

func TestWholeBodyClosedWithoutEOFIsClean(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "26")
		io.WriteString(w, `{"token":"user-secret-42"}`)
	}))
	defer srv.Close()
	g := newRig(t, regexp.MustCompile(`user-secret-\d+`))
	resp, err := g.client.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	readExactly(t, resp.Body, 26) // a decoder stops at the end of the value
	resp.Body.Close()
	it := g.load(t).Interactions[0]
	if it.Stream.Error != nil || it.Response.Body != `{"token":"[scrubbed]"}` {
		t.Errorf("recorded %+v, error %+v", it.Response, it.Stream.Error)
	}
	// The length follows the scrubbed body.
	if it.Response.Headers.Get("Content-Length") != fmt.Sprint(len(it.Response.Body)) {
		t.Errorf("Content-Length %s for %d bytes", it.Response.Headers.Get("Content-Length"), len(it.Response.Body))
	}
}

func TestScrubChunksKeepsCuts(t *testing.T) {
	s := &scrubber{patterns: []*regexp.Regexp{regexp.MustCompile(`SECRET`)}}
	for _, tt := range []struct {
		in, want []string
	}{
		{[]string{"a SECRET b", "c"}, []string{"a [scrubbed] b", "c"}},
		{[]string{"a SEC", "RET b"}, []string{"a ", "[scrubbed] b"}},
		{[]string{"a S", "EC", "RET b"}, []string{"a ", "[scrubbed] b"}},
		{[]string{"a ", "SECRET", " b"}, []string{"a ", "[scrubbed]", " b"}},
		{[]string{"SECRETSECRET", "x"}, []string{"[scrubbed][scrubbed]", "x"}},
	} {
		body, got, _ := s.chunks(tt.in)
		if !reflect.DeepEqual(got, tt.want) || body != strings.Join(tt.want, "") {
			t.Errorf("%q: got %q (%q)", tt.in, got, body)
		}
	}
}

func TestScrubURL(t *testing.T) {
	u, _ := url.Parse("https://u:pw-0123456789@h/p?Key=abc&alt=sse&token=&access_token=t%2Bx&q=1")
	s := newScrubber(u, nil, nil)
	if got, want := s.url(u), "https://%5Bscrubbed%5D:%5Bscrubbed%5D@h/p?Key=[scrubbed]&alt=sse&token=&access_token=[scrubbed]&q=1"; got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func TestNewFailsOnABadPath(t *testing.T) {
	if _, err := New(Options{Path: filepath.Join(t.TempDir(), "missing", "c.yaml")}); err == nil {
		t.Error("no error for a directory that does not exist")
	}
	if _, err := New(Options{}); err == nil {
		t.Error("no error without a path")
	}
}

// TestProxyClientDoesNotWaitForTheDisk: through the recording proxy over
// loopback, with every sync of the cassette held up, clients still read
// each streamed reply to its end, and each completed interaction is
// already in the file (a killed process keeps it; ours and stock go-vcr
// load it); a sync that then fails stops the recording: Close reports
// ErrIncomplete, the proxy answers 507, and the file keeps every
// interaction saved.
func TestProxyClientDoesNotWaitForTheDisk(t *testing.T) {
	held := make(chan struct{})
	started := make(chan struct{}, 1)
	failed := errors.New("the disk is gone")
	syncFile := func(*cassette.Syncer) error {
		select {
		case started <- struct{}{}:
		default:
		}
		<-held
		return failed
	}
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		http.NewResponseController(w).Flush() //nolint:errcheck // streamed: no Content-Length
		io.WriteString(w, "data: "+r.URL.Path+"\n\n")
	}))
	defer upstream.Close()
	up, _ := url.Parse(upstream.URL)
	g := newRigWith(t, Options{syncFile: syncFile})
	proxy := httptest.NewServer(NewProxy(up, g.rec))
	defer proxy.Close()
	client := &http.Client{Transport: &http.Transport{}}
	for i := range 3 {
		path := fmt.Sprintf("/v1/%d", i)
		if code, body := gettest.Get(t, client, proxy.URL+path); code != 200 || body != "data: "+path+"\n\n" {
			t.Fatalf("request %d: %d %q", i, code, body)
		}
		if f := g.load(t); len(f.Interactions) != i+1 || f.Interactions[i].Response.Body != "data: "+path+"\n\n" {
			t.Fatalf("after request %d the file holds %d interactions", i, len(f.Interactions))
		}
	}
	if c, err := vcr.Load(strings.TrimSuffix(g.path, ".yaml")); err != nil || len(c.Interactions) != 3 {
		t.Fatalf("stock go-vcr: %v", err)
	}
	// A sync was asked for behind the saves and is held up: the clients
	// above never waited for it.
	wait(t, context.Background(), started, "a sync behind the saves")
	close(held) // the sync fails; Close waits for the syncing goroutine
	if err := g.rec.Close(); !errors.Is(err, ErrIncomplete) || !errors.Is(err, failed) {
		t.Errorf("Close: %v", err)
	}
	if code, body := gettest.Get(t, client, proxy.URL+"/v1/late"); code != http.StatusInsufficientStorage || !strings.Contains(body, failed.Error()) {
		t.Errorf("after the failed sync: %d %q", code, body)
	}
	if f := g.load(t); len(f.Interactions) != 3 {
		t.Errorf("after the failed sync the file holds %d interactions, want 3", len(f.Interactions))
	}
}

// lastWriteChecker is the proxy's ResponseWriter seen by a test: the write
// that hands the client the last byte of a Content-Length reply checks
// that the file already holds the interaction.
type lastWriteChecker struct {
	http.ResponseWriter
	t        *testing.T
	path     string
	n, total int
	held     int // interactions in the file when the last byte went out
}

func (w *lastWriteChecker) Write(p []byte) (int, error) {
	w.n += len(p)
	if w.n >= w.total && w.held < 0 {
		f, err := cassette.Load(w.path)
		if err != nil {
			w.t.Errorf("loading the cassette as the reply ends: %v", err)
		} else {
			w.held = len(f.Interactions)
		}
	}
	return w.ResponseWriter.Write(p)
}

func (w *lastWriteChecker) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// TestProxyContentLengthReplyIsSavedBeforeItsLastBytes: a reply with a
// Content-Length is whole for the client with its last byte, before the
// recorder reads its EOF; through the proxy over loopback, that byte goes
// out only once the interaction is in the file, and so a client that reads
// the reply and then finds the file finds it there.
func TestProxyContentLengthReplyIsSavedBeforeItsLastBytes(t *testing.T) {
	body := strings.Repeat("{\"k\":\"v\"}", 300)
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", fmt.Sprint(len(body)))
		io.WriteString(w, body[:100])
		http.NewResponseController(w).Flush() //nolint:errcheck // the reply arrives in two reads at least
		io.WriteString(w, body[100:])
	}))
	defer upstream.Close()
	up, _ := url.Parse(upstream.URL)
	g := newRig(t)
	defer g.rec.Close()
	var checkers []*lastWriteChecker
	var mu sync.Mutex
	h := NewProxy(up, g.rec)
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c := &lastWriteChecker{ResponseWriter: w, t: t, path: g.path, total: len(body), held: -1}
		mu.Lock()
		checkers = append(checkers, c)
		mu.Unlock()
		h.ServeHTTP(c, r)
	}))
	defer proxy.Close()
	client := &http.Client{Transport: &http.Transport{}}
	for i := range 3 {
		if code, got := gettest.Get(t, client, proxy.URL+"/v1/x"); code != 200 || got != body {
			t.Fatalf("request %d: %d, %d bytes", i, code, len(got))
		}
		if f := g.load(t); len(f.Interactions) != i+1 {
			t.Fatalf("after request %d the client read, the file holds %d interactions", i, len(f.Interactions))
		}
		mu.Lock()
		if c := checkers[i]; c.held != i+1 {
			t.Errorf("request %d: the last byte went to the client with %d interactions in the file, want %d", i, c.held, i+1)
		}
		mu.Unlock()
	}
	if it := g.load(t).Interactions[0]; it.Response.Body != body || it.Stream.Error != nil {
		t.Errorf("recorded %d bytes, error %+v", len(it.Response.Body), it.Stream.Error)
	}
}

// TestCassetteWhileRecording: Cassette mid-recording gives the completed
// interactions (read back from the text written for those already in the
// file, the rest as held) and the session, exactly as the file holds them;
// Recorded counts them.
func TestCassetteWhileRecording(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: {\"n\":\""+r.URL.Path+"\"}\n\n")
	}))
	defer srv.Close()
	g := newRig(t)
	defer g.rec.Close()
	for i, p := range []string{"/a", "/b", "/c"} {
		g.post(t, srv.URL+p, `{"i":`+strconv.Itoa(i)+`}`)
	}
	if err := g.rec.SetSession(&cassette.Session{SessionID: "s1", Commands: []cassette.Command{{Line: `{"cmd":"user"}`}}}); err != nil {
		t.Fatal(err)
	}
	got, err := g.rec.Cassette()
	if err != nil {
		t.Fatal(err)
	}
	want := g.load(t)
	if n := g.rec.Recorded(); n != 3 || len(got.Interactions) != 3 {
		t.Fatalf("Recorded %d, Cassette holds %d interactions; want 3", n, len(got.Interactions))
	}
	if !reflect.DeepEqual(got.Interactions, want.Interactions) || !reflect.DeepEqual(got.Session, want.Session) {
		t.Errorf("Cassette() is not what the file holds:\n%+v\n---\n%+v", got, want)
	}
}

// TestSavedInteractionsAreNotHeld: once an interaction is in the file the
// recorder holds neither its text nor its decoded form (a later rewrite,
// Close and Cassette read it back from the file), so its memory does not
// grow with what it has recorded; the finished file is still exactly
// what Marshal gives.
func TestSavedInteractionsAreNotHeld(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, strings.Repeat("reply ", 2000))
	}))
	defer srv.Close()
	g := newRig(t)
	for i := range 20 {
		g.post(t, srv.URL+"/v1/x", strings.Repeat("history ", 500*(i+1)))
	}
	g.rec.saveMu.Lock()
	g.rec.mu.Lock()
	for i, e := range g.rec.entries {
		if !e.written || e.enc != nil || e.it != nil || e.at.Len == 0 {
			t.Errorf("interaction %d: written %v, holds text %v, holds the interaction %v", i+1, e.written, e.enc != nil, e.it != nil)
		}
	}
	g.rec.mu.Unlock()
	g.rec.saveMu.Unlock()
	mid, err := g.rec.Cassette()
	if err != nil {
		t.Fatal(err)
	}
	if err := g.rec.Close(); err != nil {
		t.Fatal(err)
	}
	f := g.load(t)
	want, err := (&cassette.File{Version: cassette.FormatVersion, Interactions: mid.Interactions}).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(g.path)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Interactions) != 20 || !bytes.Equal(data, want) {
		t.Errorf("the finished file holds %d interactions and is not what Marshal gives for what Cassette gave", len(f.Interactions))
	}
}

// TestWorkingFileChangedUnderTheRecording: a saved interaction's bytes
// changed in the file by someone else, or the file cut short, are caught
// when Close reads them back: Close says so, and the file is left as it is
// instead of being replaced by a cassette made of what it holds now.
func TestWorkingFileChangedUnderTheRecording(t *testing.T) {
	for _, tt := range []struct {
		name   string
		tamper func(data []byte, at int) []byte
	}{
		{"bytes changed", func(data []byte, at int) []byte {
			out := bytes.Clone(data)
			copy(out[at:], "THE ANSWER")
			return out
		}},
		{"cut short", func(data []byte, at int) []byte { return bytes.Clone(data[:at]) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.WriteString(w, "the answer")
			}))
			defer srv.Close()
			g := newRig(t)
			for range 2 {
				g.post(t, srv.URL+"/v1/x", `{"q":"what"}`)
			}
			data, err := os.ReadFile(g.path)
			if err != nil {
				t.Fatal(err)
			}
			i := bytes.LastIndex(data, []byte("the answer"))
			if i < 0 {
				t.Fatalf("no answer in the working file:\n%s", data)
			}
			tampered := tt.tamper(data, i)
			if err := os.WriteFile(g.path, tampered, 0o600); err != nil {
				t.Fatal(err)
			}
			err = g.rec.Close()
			if err == nil || !strings.Contains(err.Error(), "changed while being recorded") {
				t.Fatalf("Close: %v; want the change reported", err)
			}
			after, rerr := os.ReadFile(g.path)
			if rerr != nil || !bytes.Equal(after, tampered) {
				t.Errorf("the file was replaced after the change was found (%v)", rerr)
			}
		})
	}
}
