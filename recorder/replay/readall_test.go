package replay

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/iotest"
)

// TestReadAllTakesTheStatedSizeAsAHint: readAll gives what io.ReadAll
// gives, whether the stated size is right, short, long, unknown or past
// the presize bound, the body arriving whole or a byte per read, and a
// read failure is returned with what came before it.
func TestReadAllTakesTheStatedSizeAsAHint(t *testing.T) {
	body := strings.Repeat("0123456789", 700) // 7,000 B: past io.ReadAll's first buffer
	broke := errors.New("connection reset")
	tests := []struct {
		name string
		size int64
		body string
		fail error
	}{
		{"exact", int64(len(body)), body, nil},
		{"stated shorter", 100, body, nil},
		{"stated longer", int64(len(body)) * 3, body, nil},
		{"unknown", -1, body, nil},
		{"past the presize bound", maxPresize + 1, body, nil},
		{"empty, stated 0", 0, "", nil},
		{"one byte, stated 0", 0, "x", nil},
		{"a failure midway", int64(len(body)), body[:3000], broke},
	}
	for _, tt := range tests {
		for _, oneByte := range []bool{false, true} {
			name := tt.name
			if oneByte {
				name += ", a byte per read"
			}
			t.Run(name, func(t *testing.T) {
				var r io.Reader = strings.NewReader(tt.body)
				if tt.fail != nil {
					r = io.MultiReader(r, iotest.ErrReader(tt.fail))
				}
				if oneByte {
					r = iotest.OneByteReader(r)
				}
				got, err := readAll(r, tt.size)
				if !errors.Is(err, tt.fail) || tt.fail == nil && err != nil {
					t.Fatalf("error %v, want %v", err, tt.fail)
				}
				if string(got) != tt.body {
					t.Fatalf("read %d B, want the %d B sent", len(got), len(tt.body))
				}
			})
		}
	}
}

// TestAWrongContentLengthStillMatches: the replay reads a request's whole
// body whatever its ContentLength says, so a request that states too much
// or too little (or nothing) is matched by the body it sent.
func TestAWrongContentLengthStillMatches(t *testing.T) {
	url := recordedBase + "/chat/completions"
	sent := chat("m", strings.Repeat("long prompt ", 200))
	for _, stated := range []int64{int64(len(sent)), 10, int64(len(sent)) + 1000, -1} {
		f := file(streamed(url, sent, chunks(0, 0, "ok"), nil))
		req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, url, io.NopCloser(bytes.NewReader([]byte(sent))))
		if err != nil {
			t.Fatal(err)
		}
		req.ContentLength = stated
		req.Header.Set("Content-Type", "application/json")
		resp, err := New(f, Options{}).RoundTrip(req)
		if err != nil {
			t.Fatalf("ContentLength %d: %v", stated, err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || string(got) != "ok" {
			t.Fatalf("ContentLength %d: status %d, body %q, want the recorded reply", stated, resp.StatusCode, got)
		}
	}
}
