package recorder

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"reflect"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/openmax/openmax/internal/hostiletest"
)

func gzipOf(s string) []byte {
	var b bytes.Buffer
	z := gzip.NewWriter(&b)
	io.WriteString(z, s)
	z.Close()
	return b.Bytes()
}

// TestSecretHeadersAreScrubbed: every header whose name says key, token,
// secret, auth, credential, password, session, cookie or signature is
// scrubbed on both sides, its value wherever else it appears too; the
// rate-limit headers, which count tokens, are kept.
func TestSecretHeadersAreScrubbed(t *testing.T) {
	secrets := map[string]string{
		"X-Goog-Api-Key":            "AIzaSy-goog-secret-1",
		"Ocp-Apim-Subscription-Key": "azure-apim-secret-2",
		"X-Auth-Token":              "auth-token-secret-3",
		"X-Amz-Security-Token":      "amz-session-secret-4",
		"X-Hub-Signature-256":       "sha256=signature-secret-5",
		"Private-Token":             "gitlab-secret-6",
		"X-Client-Secret":           "client-secret-7",
		"X-Session-Id":              "session-secret-8",
		"Sec-Websocket-Protocol":    "openai-insecure-api-key.sk-ws-secret-9",
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Ratelimit-Remaining-Tokens", "9999")
		w.Header().Set("Anthropic-Ratelimit-Tokens-Limit", "80000")
		w.Header().Set("X-Upstream-Auth-Echo", "resp-auth-secret-10")
		io.WriteString(w, `{"echo":"`+r.Header.Get("X-Goog-Api-Key")+`"}`)
	}))
	defer srv.Close()
	g := newRig(t)
	req, _ := http.NewRequest("POST", srv.URL+"/v1?client_secret=qs-secret-11&sig=qs-secret-12&alt=sse", strings.NewReader(`{"key":"AIzaSy-goog-secret-1"}`))
	for k, v := range secrets {
		req.Header.Set(k, v)
	}
	resp, err := g.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.ReadAll(resp.Body)
	resp.Body.Close()
	data, err := os.ReadFile(g.path)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range append(mapValues(secrets), "resp-auth-secret-10", "qs-secret-11", "qs-secret-12", "secret-") {
		if bytes.Contains(data, []byte(v)) {
			t.Errorf("the cassette holds %q:\n%s", v, data)
		}
	}
	it := g.load(t).Interactions[0]
	for k := range secrets {
		if got := it.Request.Headers.Get(k); got != Scrubbed {
			t.Errorf("request header %s = %q", k, got)
		}
	}
	if got := it.Response.Headers.Get("X-Ratelimit-Remaining-Tokens"); got != "9999" {
		t.Errorf("rate-limit header = %q, want it kept", got)
	}
	if got := it.Response.Headers.Get("Anthropic-Ratelimit-Tokens-Limit"); got != "80000" {
		t.Errorf("rate-limit header = %q, want it kept", got)
	}
	if !strings.Contains(it.Request.URL, "alt=sse") {
		t.Errorf("url %s lost its plain parameter", it.Request.URL)
	}
}

func mapValues(m map[string]string) []string {
	var out []string
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

// TestEncodedBodiesAreStoredDecoded: a response body the transport left
// encoded is decoded, scrubbed and stored decoded without its encoding
// headers; one that cannot be decoded (br, corrupt, a bomb past the
// limit) is stored as a placeholder, never as the encoded bytes.
func TestEncodedBodiesAreStoredDecoded(t *testing.T) {
	const text = `{"note":"user-secret-42 inside"}`
	var zl, raw bytes.Buffer
	zw := zlib.NewWriter(&zl)
	io.WriteString(zw, text)
	zw.Close()
	fw, _ := flate.NewWriter(&raw, flate.DefaultCompression)
	io.WriteString(fw, text)
	fw.Close()
	var bomb bytes.Buffer
	bw, _ := gzip.NewWriterLevel(&bomb, gzip.BestCompression)
	bw.Write(make([]byte, 8<<20))
	bw.Close()
	tests := []struct {
		name     string
		coding   string
		body     []byte
		want     string // the stored body; a prefix when placeholder
		holder   bool
		mentions string
	}{
		{"gzip the client asked for", "gzip", gzipOf(text), `{"note":"[scrubbed] inside"}`, false, ""},
		{"deflate (zlib)", "deflate", zl.Bytes(), `{"note":"[scrubbed] inside"}`, false, ""},
		{"deflate (raw)", "deflate", raw.Bytes(), `{"note":"[scrubbed] inside"}`, false, ""},
		{"gzip, gzip", "gzip, gzip", gzipOf(string(gzipOf(text))), `{"note":"[scrubbed] inside"}`, false, ""},
		{"br", "br", []byte("\x1b\x1f\x00brotli-bytes user-secret-42"), BodyNotStored, true, `Content-Encoding br could not be decoded`},
		{"zstd", "zstd", []byte("\x28\xb5\x2f\xfd user-secret-42"), BodyNotStored, true, `"zstd"`},
		{"corrupt gzip", "gzip", []byte("\x1f\x8b not really user-secret-42"), BodyNotStored, true, "gzip"},
		{"gzip bomb", "gzip", bomb.Bytes(), BodyNotStored, true, "decodes to more than 1048576 bytes (1 MiB)"},
	}
	defer func(l int64) { bodyLimit = l }(bodyLimit)
	bodyLimit = 1 << 20
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Encoding", tt.coding)
				w.Header().Set("Content-Length", fmt.Sprint(len(tt.body)))
				w.Write(tt.body)
			}))
			defer srv.Close()
			g := newRig(t, regexp.MustCompile(`user-secret-\d+`))
			req, _ := http.NewRequest("GET", srv.URL, nil)
			req.Header.Set("Accept-Encoding", "gzip, deflate, br, zstd") // the transport leaves the body encoded
			resp, err := g.client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if !bytes.Equal(got, tt.body) {
				t.Fatalf("the client read %d bytes, not the %d sent", len(got), len(tt.body))
			}
			it := g.load(t).Interactions[0]
			if h := it.Response.Headers; h.Get("Content-Encoding") != "" || h.Get("Content-Length") != "" {
				t.Errorf("recorded headers %v: the body is stored decoded", h)
			}
			b := it.Response.Body
			if tt.holder && (!strings.HasPrefix(b, tt.want) || !strings.Contains(b, tt.mentions)) || !tt.holder && b != tt.want {
				t.Errorf("stored %q, want %q (mentioning %q)", b, tt.want, tt.mentions)
			}
			if strings.Contains(b, "user-secret") || strings.Contains(b, "\x1f\x8b") {
				t.Errorf("stored %q: unscrubbed or still encoded", b)
			}
		})
	}
}

// TestDecodedChunksKeepTheirTiming: a streamed gzip body flushed once per
// event decodes into one piece per chunk, so paced replay keeps the
// arrival of each event.
func TestDecodedChunksKeepTheirTiming(t *testing.T) {
	events := []string{"data: {\"a\":1}\n\n", "data: {\"b\":2}\n\n", "", "data: [DONE]\n\n"}
	var b bytes.Buffer
	z := gzip.NewWriter(&b)
	var chunks []string
	last := 0
	for _, e := range events {
		io.WriteString(z, e)
		z.Flush()
		chunks = append(chunks, b.String()[last:])
		last = b.Len()
	}
	z.Close()
	chunks[len(chunks)-1] += b.String()[last:]
	got, err := decodeChunks([]string{"gzip"}, chunks, 1<<20)
	if err != nil || !reflect.DeepEqual(got, events) {
		t.Fatalf("got %q, %v; want %q", got, err, events)
	}
	// Cut short: what decoded is kept.
	got, err = decodeChunks([]string{"gzip"}, chunks[:2], 1<<20)
	if err != nil || strings.Join(got, "") != events[0]+events[1] {
		t.Fatalf("cut short: got %q, %v", got, err)
	}
}

// TestOversizedBodyIsNotKept: a response body past the limit still
// reaches the client whole, and the cassette holds a placeholder instead
// of keeping it in memory.
func TestOversizedBodyIsNotKept(t *testing.T) {
	defer func(l int64) { bodyLimit = l }(bodyLimit)
	bodyLimit = 1 << 10
	big := strings.Repeat("y", 4<<10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for i := 0; i < 4; i++ {
			io.WriteString(w, big[i<<10:(i+1)<<10])
			http.NewResponseController(w).Flush() //nolint:errcheck
		}
	}))
	defer srv.Close()
	g := newRig(t)
	resp, err := g.client.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(got) != big {
		t.Fatalf("the client read %d bytes", len(got))
	}
	it := g.load(t).Interactions[0]
	if !strings.HasPrefix(it.Response.Body, BodyNotStored) || !strings.Contains(it.Response.Body, "over the limit of 1024 bytes") || len(it.Stream.Chunks) != 1 {
		t.Errorf("stored %q in %d chunk(s)", it.Response.Body, len(it.Stream.Chunks))
	}
}

// TestEncodedRequestBodyIsScrubbed: a gzip request body is stored
// decoded and scrubbed, and a live request scrubbed for matching comes
// out the same.
func TestEncodedRequestBodyIsScrubbed(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "{}") }))
	defer srv.Close()
	pat := regexp.MustCompile(`user-secret-\d+`)
	g := newRig(t, pat)
	body := gzipOf(`{"q":"user-secret-7"}`)
	req, _ := http.NewRequest("POST", srv.URL+"/v1", bytes.NewReader(body))
	req.Header.Set("Content-Encoding", "gzip")
	resp, err := g.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.ReadAll(resp.Body)
	resp.Body.Close()
	it := g.load(t).Interactions[0]
	if it.Request.Body != `{"q":"[scrubbed]"}` || it.Request.Headers.Get("Content-Encoding") != "" {
		t.Errorf("stored request %q with headers %v", it.Request.Body, it.Request.Headers)
	}
	h := http.Header{"Content-Encoding": {"gzip"}}
	_, _, live := ScrubFunc([]*regexp.Regexp{pat})("POST", srv.URL+"/v1", h, body)
	if string(live) != it.Request.Body {
		t.Errorf("a live request scrubs to %q, the recording holds %q", live, it.Request.Body)
	}
}

// TestProxyRefusesOversizedRequestBodies: a request declaring a body over
// MaxRequestBody is answered 413 before any of it is read; a chunked one
// that sends more is cut off at the limit and answered 413. Neither goes
// upstream or into the cassette.
func TestProxyRefusesOversizedRequestBodies(t *testing.T) {
	var calls atomic.Int32
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		io.Copy(io.Discard, r.Body)
	}))
	defer upstream.Close()
	up, _ := url.Parse(upstream.URL)
	g := newRig(t)
	proxy := httptest.NewServer(NewProxy(up, g.rec))
	defer proxy.Close()

	hostiletest.OversizedBodies(t, &http.Client{Transport: &http.Transport{}}, proxy.URL,
		[]string{"1073741824 bytes, over the limit of 33554432 (32 MiB)"},
		[]string{"over the limit of 33554432 bytes (32 MiB)"})
	if n := calls.Load(); n != 0 {
		t.Errorf("the upstream got %d request(s)", n)
	}
	if n := g.rec.Recorded(); n != 0 {
		t.Errorf("%d interaction(s) recorded", n)
	}
}
