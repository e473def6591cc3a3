// Package hostiletest holds the hostile peers that tests of several
// packages share: clients that send more than a server accepts, servers
// that never stop sending. It is for tests only.
package hostiletest

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// Declared is the body size the oversized request declares: 1 GiB.
const Declared = 1 << 30

// OversizedBodies sends base two requests a server must refuse with 413
// without reading them whole: one declaring a Content-Length of 1 GiB
// (over a raw connection, with only a few bytes of the body sent), and one
// chunked body of 40 MiB (through client). Each answer must contain every
// string of its want list.
func OversizedBodies(t *testing.T, client *http.Client, base string, wantDeclared, wantChunked []string) {
	t.Helper()
	t.Run("declared", func(t *testing.T) {
		conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		conn.SetDeadline(time.Now().Add(10 * time.Second))
		fmt.Fprintf(conn, "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n{\"model\":", Declared)
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatal(err)
		}
		check(t, resp, wantDeclared)
	})
	t.Run("chunked", func(t *testing.T) {
		pr, pw := io.Pipe()
		go func() {
			chunk := make([]byte, 1<<20)
			for i := 0; i < 40; i++ {
				if _, err := pw.Write(chunk); err != nil {
					return
				}
			}
			pw.Close()
		}()
		resp, err := client.Post(base+"/v1/messages", "application/json", pr)
		pr.CloseWithError(io.ErrClosedPipe)
		if err != nil {
			t.Fatal(err)
		}
		check(t, resp, wantChunked)
	})
}

func check(t *testing.T, resp *http.Response, want []string) {
	t.Helper()
	msg, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("%s: %s", resp.Status, msg)
	}
	for _, w := range want {
		if !strings.Contains(string(msg), w) {
			t.Errorf("answer %s %s does not contain %q", resp.Status, msg, w)
		}
	}
}

// EndlessServer serves Endless(head, unit, zip, 0) on loopback until the
// test ends.
func EndlessServer(t *testing.T, head, unit string, zip bool) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(Endless(head, unit, zip, 0))
	t.Cleanup(srv.Close)
	return srv
}

// Endless answers with head, then unit over and over until the client
// hangs up. With zip the body is gzip: head, then one member of unit
// repeated to 1 MiB sent over and over (a reader takes concatenated
// members as one stream), so the server spends nothing compressing. With
// every > 0 it drips: one unit, flushed, then a pause of every.
func Endless(head, unit string, zip bool, every time.Duration) http.HandlerFunc {
	chunk := []byte(strings.Repeat(unit, 1+(32<<10)/len(unit)))
	if every > 0 {
		chunk = []byte(unit)
	}
	if zip {
		chunk = gzipBytes(strings.Repeat(unit, (1<<20)/len(unit)))
		head = string(gzipBytes(head))
	}
	return func(w http.ResponseWriter, r *http.Request) {
		// Reading the request to its end lets the server notice at once
		// that the client hung up (r.Context ends).
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		if zip {
			w.Header().Set("Content-Encoding", "gzip")
		}
		io.WriteString(w, head)
		for r.Context().Err() == nil {
			if _, err := w.Write(chunk); err != nil {
				return
			}
			if every > 0 {
				w.(http.Flusher).Flush()
				select {
				case <-r.Context().Done():
				case <-time.After(every):
				}
			}
		}
	}
}

// Gzip compresses s.
func Gzip(t *testing.T, s string) []byte {
	t.Helper()
	return gzipBytes(s)
}

func gzipBytes(s string) []byte {
	var b bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
	io.WriteString(zw, s)
	zw.Close() // writing to memory cannot fail
	return b.Bytes()
}
