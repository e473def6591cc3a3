package importer_test

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/openmax/openmax/recorder/cassette"
	"github.com/openmax/openmax/recorder/importer"
)

func gzipped(s string) []byte {
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	w.Write([]byte(s))
	w.Close()
	return b.Bytes()
}

// b64block base64-encodes data as a YAML block scalar at the given indent.
func b64block(data []byte, indent string) string {
	s := base64.StdEncoding.EncodeToString(data)
	var out strings.Builder
	for len(s) > 0 {
		n := min(76, len(s))
		out.WriteString(indent + s[:n] + "\n")
		s = s[n:]
	}
	return out.String()
}

func importOne(t *testing.T, format, data string) *cassette.Interaction {
	t.Helper()
	f, err := importer.Import(format, []byte(data))
	if err != nil {
		t.Fatalf("Import(%s): %v", format, err)
	}
	if len(f.Interactions) != 1 {
		t.Fatalf("%d interactions", len(f.Interactions))
	}
	if _, err := f.Marshal(); err != nil {
		t.Fatal(err)
	}
	return f.Interactions[0]
}

// TestVCRPyScrubAndDecode: a gzip request body, lower-case header names,
// secrets in headers, query and (echoed) response body.
func TestVCRPyScrubAndDecode(t *testing.T) {
	const key = "sk-secret-0123456789"
	reqBody := `{"model":"m","input":"hi"}`
	respBody := `{"echo":"` + key + `","ok":true}`
	doc := `interactions:
- request:
    body: !!binary |
` + b64block(gzipped(reqBody), "      ") + `    headers:
      authorization:
      - Bearer ` + key + `
      content-encoding:
      - gzip
      content-length:
      - '40'
      content-type:
      - application/json
    method: post
    uri: https://api.example.com/v1/things?api_key=` + key + `&x=1
  response:
    body:
      string: !!binary |
` + b64block(gzipped(respBody), "        ") + `    headers:
      content-type:
      - application/json
      content-encoding:
      - gzip
      set-cookie:
      - session=abcdefghijkl; Path=/; Domain=api.example.com
      x-host:
      - api.example.com
      x-echo:
      - ` + key + `
    status:
      code: 201
      message: Created
version: 1
`
	it := importOne(t, importer.Auto, doc)
	if it.Request.Method != "POST" {
		t.Errorf("method %q", it.Request.Method)
	}
	if it.Request.URL != "https://api.example.com/v1/things?api_key=[scrubbed]&x=1" {
		t.Errorf("URL %q", it.Request.URL)
	}
	if it.Request.Body != reqBody {
		t.Errorf("request body %q", it.Request.Body)
	}
	if h := it.Request.Headers; h.Get("Authorization") != "[scrubbed]" || h.Get("Content-Encoding") != "" || h.Get("Content-Length") != "" || h.Get("Content-Type") != "application/json" {
		t.Errorf("request headers %v", h)
	}
	if want := `{"echo":"[scrubbed]","ok":true}`; it.Response.Body != want {
		t.Errorf("response body %q, want %q", it.Response.Body, want)
	}
	if h := it.Response.Headers; h.Get("Set-Cookie") != "[scrubbed]" || h.Get("X-Echo") != "[scrubbed]" || h.Get("X-Host") != "api.example.com" || h.Get("Content-Encoding") != "" {
		t.Errorf("response headers %v", h)
	}
	if it.Response.Code != 201 || it.Response.Status != "201 Created" {
		t.Errorf("status %d %q", it.Response.Code, it.Response.Status)
	}
	if len(it.Stream.Chunks) != 1 || it.Stream.Chunks[0].Data != it.Response.Body {
		t.Errorf("chunks %+v", it.Stream.Chunks)
	}
	out, _ := (&cassette.File{Version: 1, Interactions: []*cassette.Interaction{it}}).Marshal()
	if bytes.Contains(out, []byte(key)) || bytes.Contains(out, []byte("abcdefghijkl")) {
		t.Errorf("a secret survived:\n%s", out)
	}
}

// TestScrubShiftsContentLength: scrubbing a body changes its length, and
// a Content-Length that described it is shifted with it.
func TestScrubShiftsContentLength(t *testing.T) {
	const key = "0123456789abcdef0123"
	body := `{"k":"` + key + `"}`
	doc := fmt.Sprintf(`version: 1
interactions:
- request:
    body: ""
    form: {}
    headers:
      X-Api-Key: [%s]
    url: http://h/v1
    method: GET
  response:
    body: '%s'
    headers:
      Content-Length: ["%d"]
    status: 200 OK
    code: 200
    duration: ""
`, key, body, len(body))
	it := importOne(t, importer.GoVCR1, doc)
	if it.Response.Body != `{"k":"[scrubbed]"}` || it.Response.Headers.Get("Content-Length") != fmt.Sprint(len(it.Response.Body)) {
		t.Fatalf("body %q, Content-Length %q", it.Response.Body, it.Response.Headers.Get("Content-Length"))
	}
}

func TestGoVCRDialects(t *testing.T) {
	v1 := `---
version: 1
interactions:
- request:
    body: ""
    form: {}
    headers: {}
    url: http://h/a
    method: GET
  response:
    body: |+
      data: 1

      data: 2


    headers:
      Content-Type:
      - text/event-stream
    status: 404 Not Found
    duration: ""
`
	it := importOne(t, importer.Auto, v1)
	if it.Response.Code != 404 || it.Response.Status != "404 Not Found" || it.Response.Duration != 0 {
		t.Errorf("code %d status %q duration %v", it.Response.Code, it.Response.Status, it.Response.Duration)
	}
	if len(it.Stream.Chunks) != 2 || it.Stream.Chunks[1].Data != "data: 2\n\n\n" {
		t.Errorf("chunks %q", it.Stream.Chunks)
	}
	v4 := `---
version: 2
interactions:
- id: 0
  request:
    proto: HTTP/1.1
    content_length: 0
    host: ""
    body: ""
    headers: {}
    url: http://h/b?q=1
    method: GET
  response:
    proto: HTTP/2.0
    content_length: -1
    uncompressed: true
    body: '{"a":1}'
    headers:
      Content-Encoding:
      - gzip
    status: 200 OK
    code: 200
    duration: 1.5s
`
	it = importOne(t, importer.Auto, v4)
	if it.Response.Duration != 1500*time.Millisecond || it.Response.Body != `{"a":1}` || it.Response.Headers.Get("Content-Encoding") != "" {
		t.Errorf("duration %v body %q headers %v", it.Response.Duration, it.Response.Body, it.Response.Headers)
	}
	if it.Request.URL != "http://h/b?q=1" {
		t.Errorf("URL %q", it.Request.URL)
	}
}

// TestHTTPRR: origin-form and absolute request lines, a bare-LF header
// line, a chunked SSE response and a gzip one.
func TestHTTPRR(t *testing.T) {
	req1 := "POST /v1/chat HTTP/1.1\r\nHost: api.example.com\r\nUser-Agent: x\nAuthorization: Bearer abcdefghijkl\r\nContent-Length: 2\r\n\r\n{}"
	resp1 := "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n" +
		"9\r\ndata: a\n\n\r\n9\r\ndata: b\n\n\r\n0\r\n\r\n"
	zbody := gzipped(`{"ok":true}`)
	req2 := "GET https://api.example.com/v1/models HTTP/1.1\nHost: api.example.com\r\n\r\n"
	resp2 := fmt.Sprintf("HTTP/2.0 503 Service Unavailable\r\nContent-Encoding: gzip\r\nContent-Length: %d\r\nContent-Type: application/json\r\n\r\n%s", len(zbody), zbody)
	trace := fmt.Sprintf("httprr trace v1\n%d %d\n%s%s%d %d\n%s%s", len(req1), len(resp1), req1, resp1, len(req2), len(resp2), req2, resp2)
	f, err := importer.Import(importer.Auto, []byte(trace))
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Interactions) != 2 {
		t.Fatalf("%d interactions", len(f.Interactions))
	}
	a, b := f.Interactions[0], f.Interactions[1]
	if a.Request.URL != "https://api.example.com/v1/chat" || a.Request.Body != "{}" || a.Request.Headers.Get("User-Agent") != "x" || a.Request.Headers.Get("Authorization") != "[scrubbed]" {
		t.Errorf("request 0: %+v", a.Request)
	}
	if a.Response.Body != "data: a\n\ndata: b\n\n" || len(a.Stream.Chunks) != 2 {
		t.Errorf("response 0: %q in %d chunks", a.Response.Body, len(a.Stream.Chunks))
	}
	if b.Request.Method != "GET" || b.Request.URL != "https://api.example.com/v1/models" {
		t.Errorf("request 1: %+v", b.Request)
	}
	if b.Response.Code != 503 || b.Response.Status != "503 Service Unavailable" || b.Response.Body != `{"ok":true}` ||
		b.Response.Headers.Get("Content-Encoding") != "" || b.Response.Headers.Get("Content-Length") != "" {
		t.Errorf("response 1: %d %q %q %v", b.Response.Code, b.Response.Status, b.Response.Body, b.Response.Headers)
	}

	for name, bad := range map[string]string{
		"no length line": "httprr trace v1\n12",
		"bad lengths":    "httprr trace v1\nx y\n",
		"truncated":      "httprr trace v1\n100 100\nGET / HTTP/1.1\r\n",
		"bad request":    "httprr trace v1\n4 0\nnope",
		"bad response":   fmt.Sprintf("httprr trace v1\n%d 4\n%snope", len(req2), req2),
	} {
		if _, err := importer.Import(importer.HTTPRR, []byte(bad)); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if f, err := importer.Import(importer.HTTPRR, []byte("httprr trace v1\n")); err != nil || len(f.Interactions) != 0 {
		t.Errorf("empty trace: %v, %v", f, err)
	}
}

func TestDetect(t *testing.T) {
	for _, tt := range []struct {
		in, want string
	}{
		{"httprr trace v1\n", importer.HTTPRR},
		{"version: 2\ninteractions: []\n", importer.GoVCR4},
		{"interactions: []\nversion: 1\n", importer.GoVCR1},
		{`{"version": 1, "interactions": [{"request": {"uri": "http://h/", "method": "GET", "body": null, "headers": {}}, "response": {"status": {"code": 200, "message": "OK"}, "headers": {}, "body": {"string": ""}}}]}`, importer.VCRPy},
	} {
		got, err := importer.Detect([]byte(tt.in))
		if err != nil || got != tt.want {
			t.Errorf("Detect(%.30q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
		if _, err := importer.Import(importer.Auto, []byte(tt.in)); err != nil {
			t.Errorf("Import(auto, %.30q): %v", tt.in, err)
		}
	}
	for _, bad := range []string{
		"",
		"hello",
		"- 1\n- 2\n",
		"version: 3\ninteractions: []\n",
		"version: 1\ninteractions:\n- request: {method: GET}\n  response: {code: 200}\n",
		"\x00\x01binary",
	} {
		if got, err := importer.Detect([]byte(bad)); !errors.Is(err, importer.ErrUnknownFormat) {
			t.Errorf("Detect(%q) = %q, %v; want ErrUnknownFormat", bad, got, err)
		}
		if _, err := importer.Import(importer.Auto, []byte(bad)); err == nil {
			t.Errorf("Import(auto, %q) succeeded", bad)
		}
	}
}

func TestBadInteractions(t *testing.T) {
	for name, doc := range map[string]string{
		"no status code":         "version: 1\ninteractions:\n- request: {uri: 'http://h/', method: GET}\n  response: {status: {message: OK}, body: {string: ''}}\n",
		"headers a list":         "version: 1\ninteractions:\n- request: {uri: 'http://h/', method: GET, headers: [a]}\n  response: {status: {code: 200}}\n",
		"no interactions member": "version: 1\n",
	} {
		if _, err := importer.Import(importer.VCRPy, []byte(doc)); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	// A header given as a single value rather than a list is taken.
	it := importOne(t, importer.VCRPy, "version: 1\ninteractions:\n- request: {uri: 'http://h/', method: GET, headers: {accept: '*/*'}}\n  response: {status: {code: 204, message: No Content}, headers: {x-n: 3}}\n")
	if it.Request.Headers.Get("Accept") != "*/*" || it.Response.Headers.Get("X-N") != "3" || it.Response.Body != "" || len(it.Stream.Chunks) != 0 {
		t.Errorf("%+v", it)
	}
}

// TestBinaryBody: a body that is not text survives the cassette round
// trip (yaml.v3 writes it as !!binary).
func TestBinaryBody(t *testing.T) {
	raw := []byte{0xff, 0xfe, 0x00, 0x80, 'a', 0xc3}
	doc := "version: 1\ninteractions:\n- request: {uri: 'http://h/f', method: GET}\n  response:\n    status: {code: 200, message: OK}\n    headers: {content-type: [application/octet-stream]}\n    body:\n      string: !!binary |\n" + b64block(raw, "        ")
	f, err := importer.Import(importer.Auto, []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	out, err := f.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	g, err := cassette.Parse(out)
	if err != nil {
		t.Fatal(err)
	}
	if got := g.Interactions[0].Response.Body; got != string(raw) {
		t.Fatalf("body %q after the round trip, want %q", got, raw)
	}
}
