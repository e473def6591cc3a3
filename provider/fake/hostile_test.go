package fake

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestOversizedRequestBodiesAre413: a request declaring a body over
// MaxRequestBody is answered 413 before any of it is read; a chunked one
// that sends more is cut off at the limit and answered 413. Neither is
// recorded as a request or consumes a reply.
func TestOversizedRequestBodiesAre413(t *testing.T) {
	h := start(t, "replies:\n  - chunks: [{text: a}]\n")
	t.Run("declared", func(t *testing.T) {
		conn, err := net.Dial("tcp", strings.TrimPrefix(h.base, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		conn.SetDeadline(time.Now().Add(10 * time.Second))
		fmt.Fprintf(conn, "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n{\"model\":", 1<<30)
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatal(err)
		}
		msg, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(msg), "1073741824 bytes, over the limit of 33554432 (32 MiB)") {
			t.Errorf("%s: %s", resp.Status, msg)
		}
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
		resp, err := h.client.Post(h.base+"/v1/messages", "application/json", pr)
		pr.CloseWithError(io.ErrClosedPipe)
		if err != nil {
			t.Fatal(err)
		}
		msg, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(msg), "over the limit of 33554432 bytes (32 MiB)") {
			t.Errorf("%s: %s", resp.Status, msg)
		}
	})
	if n := len(h.srv.Requests()); n != 0 {
		t.Errorf("%d request(s) recorded", n)
	}
}
