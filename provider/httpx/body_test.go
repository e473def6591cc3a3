package httpx

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"

	"github.com/openmax/openmax/provider"
)

func gzipped(t *testing.T, s string) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Write([]byte(s))
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestDecodeBody: what a vendor client reads of a 2xx body for each
// Content-Encoding, given the response as a transport hands it over (the
// vendors' contract suite does the same over loopback HTTP).
func TestDecodeBody(t *testing.T) {
	const text = "data: hello\n\n"
	tests := []struct {
		name         string
		encoding     string
		body         []byte
		uncompressed bool  // the transport undid the encoding itself
		max          int64 // the cap on the decoded bytes
		want         string
		wantErr      func(error) bool
		newErr       string // DecodeBody's own refusal
	}{
		{name: "no encoding", body: []byte(text), want: text},
		{name: "identity", encoding: "identity", body: []byte(text), want: text},
		{name: "gzip", encoding: "gzip", body: gzipped(t, text), want: text},
		{name: "x-gzip, any case and blanks", encoding: " X-GZIP ", body: gzipped(t, text), want: text},
		{name: "undone by the transport", encoding: "gzip", uncompressed: true, body: []byte(text), want: text},
		{name: "decoded bytes over the cap", encoding: "gzip", body: gzipped(t, strings.Repeat("a", 1000)), max: 100,
			want: strings.Repeat("a", 100), wantErr: func(err error) bool { return errors.Is(err, provider.ErrLimit) }},
		{name: "a broken gzip header", encoding: "gzip", body: []byte("not gzip at all"),
			wantErr: func(err error) bool {
				return errors.Is(err, gzip.ErrHeader) && strings.Contains(err.Error(), "reading the gzip header")
			}},
		{name: "an empty gzip body ends at once", encoding: "gzip", body: nil, wantErr: func(err error) bool { return err == nil }},
		{name: "an unsupported encoding", encoding: "br", body: []byte(text), newErr: `unsupported Content-Encoding "br"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := &http.Response{Header: http.Header{}, Body: io.NopCloser(bytes.NewReader(tt.body)), Uncompressed: tt.uncompressed}
			if tt.encoding != "" && !tt.uncompressed {
				resp.Header.Set("Content-Encoding", tt.encoding)
			}
			r, err := DecodeBody(resp, tt.max)
			if tt.newErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.newErr) {
					t.Fatalf("DecodeBody: %v, want %q", err, tt.newErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("DecodeBody: %v", err)
			}
			got, err := io.ReadAll(r)
			if string(got) != tt.want {
				t.Errorf("read %q, want %q", got, tt.want)
			}
			if tt.wantErr != nil {
				if !tt.wantErr(err) {
					t.Errorf("read error %v", err)
				}
			} else if err != nil {
				t.Errorf("read error %v", err)
			}
		})
	}
}

// TestReadFailure: a broken body read is an incomplete stream that keeps
// its cause; one that already is incomplete is left as it is.
func TestReadFailure(t *testing.T) {
	limit := &provider.LimitError{Limit: "max reply bytes", Detail: "the response body passed 1 KiB"}
	idle := fmt.Errorf("%w: no bytes for 30s (idle timeout)", provider.ErrIncomplete)
	tests := []struct {
		name  string
		err   error
		want  string
		cause error
	}{
		{"unexpected EOF", fmt.Errorf("sse: read: %w", io.ErrUnexpectedEOF),
			"stream ended without a completion signal: reading: connection closed mid-response (sse: read: unexpected EOF)", io.ErrUnexpectedEOF},
		{"a reset", fmt.Errorf("sse: read: %w", syscall.ECONNRESET),
			"stream ended without a completion signal: reading: sse: read: connection reset by peer", syscall.ECONNRESET},
		{"the idle watchdog's", idle, idle.Error(), idle},
		{"a client limit", limit, limit.Error(), provider.ErrLimit},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ReadFailure(tt.err, "reading")
			if err.Error() != tt.want || !errors.Is(err, provider.ErrIncomplete) || !errors.Is(err, tt.cause) {
				t.Fatalf("ReadFailure = %v, want %q wrapping %v", err, tt.want, tt.cause)
			}
		})
	}
}
