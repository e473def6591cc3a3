package replay_test

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
	"github.com/openmax/openmax/recorder/replay"
)

// Record one exchange with an upstream into a cassette (the key scrubbed),
// then replay it with the upstream gone.
func ExampleNew() {
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"answer":42}`)
	}))
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "answer.yaml")

	call := func(rt http.RoundTripper) string {
		req, _ := http.NewRequest("POST", upstream.URL+"/v1/chat/completions", strings.NewReader(`{"q":"life"}`))
		req.Header.Set("Authorization", "Bearer sk-example-0123456789")
		resp, err := (&http.Client{Transport: rt}).Do(req)
		if err != nil {
			return err.Error()
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return fmt.Sprint(resp.StatusCode, " ", string(body))
	}

	rec, err := recorder.New(recorder.Options{Path: path})
	if err != nil {
		panic(err)
	}
	fmt.Println("live:    ", call(rec))
	rec.Close()
	upstream.Close()

	f, err := cassette.Load(path)
	if err != nil {
		panic(err)
	}
	data, _ := os.ReadFile(path)
	fmt.Println("key kept:", strings.Contains(string(data), "sk-example"))
	r := replay.New(f, replay.Options{})
	fmt.Println("replayed:", call(r))
	fmt.Println("unused:  ", r.Unused())
	// Output:
	// live:     200 {"answer":42}
	// key kept: false
	// replayed: 200 {"answer":42}
	// unused:   []
}
