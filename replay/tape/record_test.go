package tape_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	vcr "github.com/dnaeon/go-vcr/v2/cassette"

	"github.com/openmax/openmax/core/harness"
	"github.com/openmax/openmax/recorder"
	"github.com/openmax/openmax/recorder/cassette"
	"github.com/openmax/openmax/replay/tape"
)

// lineWatcher is the client's stdout: for every line, it checks what the
// cassette on disk holds at that moment, and sends the next command when a
// turn is done.
type lineWatcher struct {
	t        *testing.T
	path     string
	send     func()
	sent     *int
	lines    int
	pending  []byte
	problems []string
}

func (w *lineWatcher) Write(p []byte) (int, error) {
	w.pending = append(w.pending, p...)
	for {
		i := bytes.IndexByte(w.pending, '\n')
		if i < 0 {
			return len(p), nil
		}
		line := string(w.pending[:i])
		w.pending = w.pending[i+1:]
		w.lines++
		f, err := cassette.Load(w.path)
		switch {
		case err != nil:
			w.problems = append(w.problems, fmt.Sprintf("line %d: the cassette does not load: %v", w.lines, err))
		case *w.sent > 0 && (f.Session == nil || len(f.Session.Commands) < *w.sent):
			w.problems = append(w.problems, fmt.Sprintf("line %d (%.60s) went out with %d command(s) sent and the cassette holding fewer", w.lines, line, *w.sent))
		}
		if _, err := vcr.Load(strings.TrimSuffix(w.path, ".yaml")); err != nil {
			w.problems = append(w.problems, fmt.Sprintf("line %d: stock go-vcr: %v", w.lines, err))
		}
		if strings.Contains(line, `"type":"done"`) || strings.Contains(line, `"type":"hello"`) {
			w.send()
		}
	}
}

// TestRecordHoldsEveryCommandBeforeTheClientSeesALine: however the session
// saves are coalesced, no line reaches the client while the cassette on
// disk lacks a command the client has sent (the line may report it), and
// the cassette loads (ours and stock go-vcr) at every line.
func TestRecordHoldsEveryCommandBeforeTheClientSeesALine(t *testing.T) {
	dir := t.TempDir()
	env := map[string]string{"XDG_CONFIG_HOME": filepath.Join(dir, "config")}
	getenv := func(k string) string { return env[k] }
	if _, err := harness.Trust(dir, getenv); err != nil {
		t.Fatal(err)
	}
	cfg := harness.Defaults()
	cfg.Provider, cfg.Project, cfg.SessionID = "echo", dir, "s-lines"
	path := filepath.Join(dir, "session.yaml")

	const turns = 4
	inR, inW := io.Pipe()
	sent := 0
	w := &lineWatcher{t: t, path: path, sent: &sent}
	w.send = func() {
		if sent == turns {
			inW.Close()
			return
		}
		sent++
		n := sent
		go io.WriteString(inW, fmt.Sprintf(`{"cmd":"user","text":"turn %d"}`+"\n", n))
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := tape.Record(ctx, inR, w, tape.RecordOptions{Config: cfg, Deps: harness.Deps{Getenv: getenv}, Cassette: recorder.Options{Path: path}}); err != nil {
		t.Fatal(err)
	}
	for _, p := range w.problems {
		t.Error(p)
	}
	f, err := cassette.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Session.Commands) != turns || w.lines < 2*turns {
		t.Errorf("%d commands recorded over %d lines, want %d", len(f.Session.Commands), w.lines, turns)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if plain, err := f.Marshal(); err != nil || !bytes.Equal(plain, data) {
		t.Errorf("the finished cassette is not in the plain layout (%v)", err)
	}
}

// failingWriter is a stdout that is gone.
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("broken pipe") }

// A recorded session whose stdout is gone shuts down at once, as a live
// one does, even though its client never closes stdin.
func TestRecordEndsWhenStdoutIsGone(t *testing.T) {
	dir := t.TempDir()
	env := map[string]string{"XDG_CONFIG_HOME": filepath.Join(dir, "config")}
	getenv := func(k string) string { return env[k] }
	if _, err := harness.Trust(dir, getenv); err != nil {
		t.Fatal(err)
	}
	cfg := harness.Defaults()
	cfg.Provider, cfg.Project = "echo", dir
	in, _ := io.Pipe() // never written, never closed
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := tape.Record(context.Background(), in, failingWriter{}, tape.RecordOptions{
			Config: cfg, Deps: harness.Deps{Getenv: getenv}, Cassette: recorder.Options{Path: filepath.Join(dir, "c.yaml")},
		})
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "broken pipe") {
			t.Fatalf("Record: %v, want the write failure", err)
		}
	case <-ctx.Done():
		t.Fatal("Record kept serving a session whose stdout is gone")
	}
}
