package tape_test

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/openmax/openmax/recorder/cassette"
	"github.com/openmax/openmax/recorder/replay"
	"github.com/openmax/openmax/replay/tape"
)

// lineLog keeps what the harness wrote, and how much of it there was when
// each request was served.
type lineLog struct {
	mu    sync.Mutex
	b     bytes.Buffer
	marks []int
}

func (l *lineLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// Tee receives the stdout, line by line before each write returns: a
// request sees every line written before it (the story's third request,
// which opens turn 2, sees turn 1's done).
func TestTee(t *testing.T) {
	f, err := cassette.Load("../../cassettes/story.yaml")
	if err != nil {
		t.Fatal(err)
	}
	tee := &lineLog{}
	serving := replay.Options{Ignore: []string{"tools"}, OnRequest: func(replay.Event) {
		tee.mu.Lock()
		tee.marks = append(tee.marks, tee.b.Len())
		tee.mu.Unlock()
	}}
	r, err := tape.Replay(context.Background(), f, tape.ReplayOptions{Serving: serving, Tee: tee})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(tee.b.Bytes(), r.Stdout) {
		t.Fatalf("the tee got\n%s\nthe result's stdout is\n%s", tee.b.Bytes(), r.Stdout)
	}
	if len(tee.marks) != 3 {
		t.Fatalf("%d requests, want the story's 3", len(tee.marks))
	}
	before := string(r.Stdout[:tee.marks[2]])
	if !strings.Contains(before, `"type":"done","stop_reason":"truncated"`) || strings.Count(before, `"type":"budget"`) != 2 {
		t.Errorf("the third request came after:\n%s", before)
	}
}
