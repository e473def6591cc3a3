package main

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestEchoedKeyNeverWritten: an OpenAI-compatible upstream that echoes the
// caller's API key in its reply, split across two deltas. Neither stdout,
// stderr, nor anything under the state directory (the session file) may
// carry it.
func TestEchoedKeyNeverWritten(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary; skipped in -short mode")
	}
	const key = "sk-proj-ECHOEDKEY0123456789"
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		half := len(got) / 2
		w.Header().Set("Content-Type", "text/event-stream")
		chunk := func(delta string) {
			fmt.Fprintf(w, "data: {\"id\":\"x\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":%s,\"finish_reason\":null}]}\n\n", delta)
		}
		requests.Add(1)
		chunk(`{"role":"assistant","content":"your key is ` + got[:half] + `"}`)
		chunk(`{"content":"` + got[half:] + `, right?"}`)
		fmt.Fprint(w, "data: {\"id\":\"x\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
	}))
	defer srv.Close()

	bin := buildBinary(t)
	dir, state := t.TempDir(), t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	env := trustedBinaryEnv(t, ctx, bin, dir, state, "OPENAI_API_KEY="+key)
	cmd := exec.CommandContext(ctx, bin, "--stdio", "--provider", "openai", "--base-url", srv.URL+"/v1", "--project", dir)
	cmd.Env = env
	cmd.Stdin = strings.NewReader(`{"cmd":"user","text":"what is my key?"}` + "\n")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("exit: %v\nstderr: %s", err, stderr.String())
	}
	if requests.Load() != 1 || !strings.Contains(stdout.String(), "your key is [redacted], right?") {
		t.Fatalf("%d requests; stdout does not show the redacted reply:\n%s", requests.Load(), stdout.String())
	}
	for name, s := range map[string]string{"stdout": stdout.String(), "stderr": stderr.String()} {
		if strings.Contains(s, "ECHOEDKEY") {
			t.Errorf("%s carries the key:\n%s", name, s)
		}
	}
	files := 0
	err := filepath.WalkDir(state, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		files++
		data, err := os.ReadFile(path)
		if err == nil && bytes.Contains(data, []byte("ECHOEDKEY")) {
			t.Errorf("%s carries the key", path)
		}
		return err
	})
	if err != nil || files == 0 {
		t.Fatalf("walking the state directory: %v (%d files; the session file should be there)", err, files)
	}
}
