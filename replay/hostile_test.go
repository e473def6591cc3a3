package replay

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/openmax/openmax/recorder/cassette"
)

// TestHandlerRefusesOversizedRequestBodies: a request declaring a body over
// MaxRequestBody is answered 413, in the vendor's error shape, before any
// of it is read; a chunked one that sends more is cut off at the limit
// and answered 413. Neither claims an interaction.
func TestHandlerRefusesOversizedRequestBodies(t *testing.T) {
	f := file(streamed(recordedBase+"/chat/completions", chat("m", "hi"), []cassette.Chunk{{Data: "data: [DONE]\n\n"}}, nil))
	base, h, client := serve(t, f, Options{})
	t.Run("declared", func(t *testing.T) {
		conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
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
		if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(msg), `"code":"request_too_large"`) ||
			!strings.Contains(string(msg), "1073741824 bytes, over the limit of 33554432 (32 MiB)") {
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
		resp, err := client.Post(base+"/v1/messages", "application/json", pr)
		pr.CloseWithError(io.ErrClosedPipe)
		if err != nil {
			t.Fatal(err)
		}
		msg, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(msg), `"type":"error"`) ||
			!strings.Contains(string(msg), "over the limit of 33554432 bytes (32 MiB)") {
			t.Errorf("%s: %s", resp.Status, msg)
		}
	})
	if u := h.Unused(); len(u) != 1 {
		t.Errorf("unused %v: an oversized request claimed an interaction", u)
	}
}
