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

// The same scenario served as the OpenAI Responses API, the wire the codex
// CLI speaks: typed events ending with response.completed.
func ExampleNew_responses() {
	sc, err := script.Parse([]byte("replies:\n  - text: Hello\n    usage: {prompt_tokens: 3, completion_tokens: 1}\n"))
	if err != nil {
		panic(err)
	}
	s := fake.New(sc, fake.Options{})
	defer s.Close()
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()

	resp, err := http.Post(srv.URL+"/v1/responses", "application/json",
		strings.NewReader(`{"model":"m","stream":true,"input":"hi"}`))
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(line, "event: ") {
			fmt.Println(line)
		}
	}
	// Output:
	// event: response.created
	// event: response.in_progress
	// event: response.output_item.added
	// event: response.content_part.added
	// event: response.output_text.delta
	// event: response.output_text.done
	// event: response.content_part.done
	// event: response.output_item.done
	// event: response.completed
}
