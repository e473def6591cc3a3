package fake_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/openmax/openmax/provider/fake"
	"github.com/openmax/openmax/provider/script"
)

// A scripted OpenAI-compatible server on loopback: any client (an SDK, a
// CLI, your own code) pointed at it gets the scripted stream.
func ExampleNew() {
	sc, err := script.Parse([]byte("replies:\n  - text: Hello\n    finish: stop\n"))
	if err != nil {
		panic(err)
	}
	s := fake.New(sc, fake.Options{})
	defer s.Close()
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()

	resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Println(resp.StatusCode, resp.Header.Get("Content-Type"))
	fmt.Println(strings.Contains(string(body), `"content":"Hello"`), strings.HasSuffix(string(body), "data: [DONE]\n\n"))
	// Output:
	// 200 text/event-stream; charset=utf-8
	// true true
}
