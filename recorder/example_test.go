package recorder_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"

	"github.com/openmax/openmax/recorder"
	"github.com/openmax/openmax/recorder/cassette"
)

// A recorder is an http.RoundTripper: the client reads the stream as it
// arrives while every chunk is kept, and the cassette on disk is a go-vcr
// v2 cassette with the streaming detail beside it.
func ExampleNew() {
	next := make(chan bool)
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: Hello\n\n")
		w.(http.Flusher).Flush()
		<-next // the second event waits until the client has the first
		fmt.Fprint(w, "data: world\n\n")
	}))
	defer upstream.Close()
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "stream.yaml")

	rec, err := recorder.New(recorder.Options{Path: path})
	if err != nil {
		panic(err)
	}
	resp, err := (&http.Client{Transport: rec}).Post(upstream.URL+"/v1/chat/completions", "application/json", strings.NewReader(`{}`))
	if err != nil {
		panic(err)
	}
	first := make([]byte, len("data: Hello\n\n"))
	io.ReadFull(resp.Body, first)
	next <- true
	rest, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	body := append(first, rest...)
	if err := rec.Close(); err != nil {
		panic(err)
	}
	fmt.Printf("the client read %q\n", body)

	f, err := cassette.Load(path)
	if err != nil {
		panic(err)
	}
	it := f.Interactions[0]
	fmt.Println("status:", it.StatusLine())
	for i, c := range it.Chunks() {
		fmt.Printf("chunk %d: %q\n", i, c.Data)
	}
	fmt.Println("ended cleanly:", it.Failure() == nil)
	// Output:
	// the client read "data: Hello\n\ndata: world\n\n"
	// status: 200 OK
	// chunk 0: "data: Hello\n\n"
	// chunk 1: "data: world\n\n"
	// ended cleanly: true
}
