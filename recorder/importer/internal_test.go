package importer

import (
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/openmax/openmax/recorder"
)

func TestSplitEvents(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []string
	}{
		{"empty", "", nil},
		{"lf", "data: a\n\ndata: b\n\n", []string{"data: a\n\n", "data: b\n\n"}},
		{"crlf", "event: x\r\ndata: a\r\n\r\ndata: b\r\n\r\n", []string{"event: x\r\ndata: a\r\n\r\n", "data: b\r\n\r\n"}},
		{"cr", "data: a\r\rdata: b\r\r", []string{"data: a\r\r", "data: b\r\r"}},
		{"leading blank lines go with the first event", "\n\ndata: a\n\n", []string{"\n\ndata: a\n\n"}},
		{"trailing blank lines go with the last", "data: a\n\ndata: b\n\n\n\n", []string{"data: a\n\n", "data: b\n\n\n\n"}},
		{"unterminated tail", "data: a\n\ndata: b\n", []string{"data: a\n\n", "data: b\n"}},
		{"unterminated last line", "data: a\n\ndata: b", []string{"data: a\n\n", "data: b"}},
		{"no blank line at all", "data: a\ndata: b\n", []string{"data: a\ndata: b\n"}},
		{"comment block", ": keep-alive\n\ndata: a\n\n", []string{": keep-alive\n\n", "data: a\n\n"}},
		{"only blank lines", "\n\n", []string{"\n\n"}},
	}
	for _, tt := range tests {
		got := splitEvents(tt.in)
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: splitEvents(%q) = %q, want %q", tt.name, tt.in, got, tt.want)
		}
		if strings.Join(got, "") != tt.in {
			t.Errorf("%s: pieces do not add up", tt.name)
		}
	}
}

func gz(s string) []byte {
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	w.Write([]byte(s))
	w.Close()
	return b.Bytes()
}

func zl(s string) []byte {
	var b bytes.Buffer
	w := zlib.NewWriter(&b)
	w.Write([]byte(s))
	w.Close()
	return b.Bytes()
}

func TestDecodeBody(t *testing.T) {
	hdr := func(kv ...string) http.Header {
		h := http.Header{}
		for i := 0; i < len(kv); i += 2 {
			h.Add(kv[i], kv[i+1])
		}
		return h
	}
	tests := []struct {
		name     string
		h        http.Header
		body     []byte
		wantH    http.Header
		wantBody string
	}{
		{"plain", hdr("Content-Length", "5"), []byte("hello"), hdr("Content-Length", "5"), "hello"},
		{"gzip", hdr("Content-Encoding", "gzip", "Content-Length", "99", "Content-Type", "text/plain"), gz("hello"), hdr("Content-Type", "text/plain"), "hello"},
		{"x-gzip", hdr("Content-Encoding", "x-gzip"), gz("hello"), hdr(), "hello"},
		{"deflate (zlib)", hdr("Content-Encoding", "deflate"), zl("hello"), hdr(), "hello"},
		{"already decoded", hdr("Content-Encoding", "gzip", "Content-Length", "5"), []byte("hello"), hdr(), "hello"},
		{"empty", hdr("Content-Encoding", "gzip"), nil, hdr(), ""},
		// What cannot be decoded cannot be scrubbed: never stored encoded.
		{"br becomes a placeholder", hdr("Content-Encoding", "br", "Content-Length", "3"), []byte{1, 2, 3}, hdr(),
			recorder.Placeholder([]string{"br"}, 3, fmt.Errorf("a content coding the recorder cannot decode: %q", "br"))},
		{"cut-short gzip keeps what decoded", hdr("Content-Encoding", "gzip"), gz("hello")[:12], hdr(), "h"},
		{"gzip under br", hdr("Content-Encoding", "br, gzip"), gz("xyz"), hdr(),
			recorder.Placeholder([]string{"br"}, 3, fmt.Errorf("a content coding the recorder cannot decode: %q", "br"))},
		{"identity", hdr("Content-Encoding", "identity"), []byte("a"), hdr("Content-Encoding", "identity"), "a"},
	}
	for _, tt := range tests {
		in := tt.h.Clone()
		h, body, err := decodeBody(tt.h, tt.body)
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
		}
		if string(body) != tt.wantBody || !reflect.DeepEqual(h, tt.wantH) {
			t.Errorf("%s: got %v %q, want %v %q", tt.name, h, body, tt.wantH, tt.wantBody)
		}
		if !reflect.DeepEqual(tt.h, in) {
			t.Errorf("%s: the input header was modified", tt.name)
		}
	}
}

// TestBodyErrorsWrap: a refused body's error keeps its cause through the
// interaction and format it is reported under.
func TestBodyErrorsWrap(t *testing.T) {
	doc := "version: 1\ninteractions:\n- request: {method: POST, uri: 'http://h/', body: '{\"a\": 1}', parsed_body: {a: 2}}\n  response: {status: {code: 200, message: OK}}\n"
	_, err := Import(VCRPy, []byte(doc))
	if !errors.Is(err, errBothBodies) || !strings.Contains(err.Error(), "interaction 0: request: ") {
		t.Fatalf("error %v, want one wrapping errBothBodies for interaction 0's request", err)
	}
}
