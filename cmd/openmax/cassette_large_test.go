package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	vcr "github.com/dnaeon/go-vcr/v2/cassette"

	"github.com/openmax/openmax/recorder/cassette"
)

// largeRecording writes, in the recorder's layout, a recording of about
// size bytes: one streamed Chat Completions interaction (a 16 KiB request,
// 300 events in chunks of one to three) repeated, and the session. It
// returns the path and the interaction.
func largeRecording(t *testing.T, size int) (string, *cassette.Interaction) {
	t.Helper()
	var body strings.Builder
	var chunks []cassette.Chunk
	var pending []string
	for i := range 300 {
		ev, _ := json.Marshal(map[string]any{"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1767225600, "model": "gpt-4o-mini",
			"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"content": fmt.Sprintf(" word%d", i)}, "finish_reason": nil}}})
		pending = append(pending, "data: "+string(ev)+"\n\n")
		if len(pending) == 1+i%3 || i == 299 {
			data := strings.Join(pending, "")
			body.WriteString(data)
			chunks = append(chunks, cassette.Chunk{At: time.Duration(i) * time.Millisecond, Data: data})
			pending = nil
		}
	}
	it := &cassette.Interaction{Stream: &cassette.Stream{Chunks: chunks}}
	it.Request.Method, it.Request.URL = http.MethodPost, "http://127.0.0.1:9/v1/chat/completions"
	it.Request.Body = `{"model":"gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"` + strings.Repeat("tell me more. ", 1200) + `"}]}`
	it.Request.Headers = http.Header{"Content-Type": {"application/json"}, "Authorization": {"[scrubbed]"}}
	it.Response.Code, it.Response.Status, it.Response.Body = 200, "200 OK", body.String()
	it.Response.Headers = http.Header{"Content-Type": {"text/event-stream"}}
	f := cassette.New()
	f.Interactions = []*cassette.Interaction{it}
	f.Session = &cassette.Session{SessionID: "s-large", Commands: []cassette.Command{{Line: `{"cmd":"user","text":"hi"}`, Anchor: cassette.Anchor{After: "hello", Nth: 1}}}}
	small, err := f.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	// version and list key | the interaction | the session
	i := bytes.Index(small, []byte("interactions:\n")) + len("interactions:\n")
	j := bytes.Index(small, []byte("\nopenmax:\n")) + 1
	head, item, tail := small[:i], small[i:j], small[j:]

	path := filepath.Join(t.TempDir(), "large.yaml")
	fh, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriterSize(fh, 1<<20)
	w.Write(head)
	for n := len(head) + len(tail); n < size; n += len(item) {
		w.Write(item)
	}
	w.Write(tail)
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := fh.Close(); err != nil {
		t.Fatal(err)
	}
	return path, it
}

// TestLargeRecordingLoadsInBoundedMemory: a recording in the
// recorder's layout larger than anything yaml.v3 decodes whole (140 MB,
// over cassette.MaxYAMLSize) is loaded by the path every command takes
// (here `fake-provider --cassette`) in one pass: it serves it, as an
// openmax cassette (no conversion note), with a peak RSS under one and a
// half times the file's size (reading it twice, through a YAML node tree,
// took over four times).
//
// It runs under the race detector too (the binary is built without it).
func TestLargeRecordingLoadsInBoundedMemory(t *testing.T) {
	bin := buildBinary(t)
	path, it := largeRecording(t, 140e6)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() <= cassette.MaxYAMLSize {
		t.Fatalf("the recording is only %d bytes", fi.Size())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s := startServer(t, ctx, bin, "fake-provider", "--cassette", path, "--pace", "instant")
	peak := vmHWM(t, s.cmd.Process.Pid)
	resp, err := http.Post(s.URL+"/v1/chat/completions", "application/json", strings.NewReader(it.Request.Body))
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(got) != it.Response.Body {
		t.Errorf("served %d bytes, not the recorded body", len(got))
	}
	s.stop(t)
	if strings.Contains(s.stderr.String(), "converted") {
		t.Errorf("loaded as another tool's recording: %s", s.stderr)
	}
	if limit := fi.Size() * 3 / 2; peak > limit {
		t.Errorf("peak RSS %d MiB loading a %d MiB recording; want at most %d MiB (1.5x)", peak>>20, fi.Size()>>20, limit>>20)
	}
	t.Logf("peak RSS %d MiB for a %d MiB recording (%.2fx)", peak>>20, fi.Size()>>20, float64(peak)/float64(fi.Size()))
}

// TestLargeRecordingLoadsInStockGoVCR: the recordings the test above
// loads are cassettes stock go-vcr loads too (a smaller one: go-vcr decodes
// at several times the size).
func TestLargeRecordingLoadsInStockGoVCR(t *testing.T) {
	path, it := largeRecording(t, 2e6)
	c, err := vcr.Load(strings.TrimSuffix(path, ".yaml"))
	if err != nil || len(c.Interactions) < 2 || c.Interactions[1].Response.Body != it.Response.Body {
		t.Fatalf("stock go-vcr: %v", err)
	}
}
