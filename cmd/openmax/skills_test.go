package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openmax/openmax/provider/clock"
)

// TestSkillsReachTheModel: the project's system file and skills are in the
// system prompt the provider receives, for -p and for a --stdio session,
// and a skill added mid-session reaches the model only after reload.
func TestSkillsReachTheModel(t *testing.T) {
	var mu sync.Mutex
	var systems []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req struct {
			Messages []struct {
				Role    string `json:"role"`
				Content any    `json:"content"`
			} `json:"messages"`
		}
		_ = json.Unmarshal(body, &req)
		sys := ""
		for _, m := range req.Messages {
			if m.Role == "system" {
				b, _ := json.Marshal(m.Content)
				sys = string(b)
			}
		}
		mu.Lock()
		systems = append(systems, sys)
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, `data: {"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"ok"},"finish_reason":"stop"}]}`+"\n\ndata: [DONE]\n\n")
	}))
	defer srv.Close()
	project := t.TempDir()
	writeFile(t, filepath.Join(project, ".openmax/system.md"), "Answer in French.\n")
	writeFile(t, filepath.Join(project, ".openmax/skills/review.md"), "Review diffs line by line.\n")
	getenv := trustedEnv(t, func(k string) string {
		if k == "OPENAI_API_KEY" {
			return testOpenAIKey
		}
		return ""
	}, project)
	flags := []string{"--provider", "openai", "--base-url", srv.URL + "/v1", "--project", project}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out, errb bytes.Buffer
	if code := run(ctx, append([]string{"-p", "hi"}, flags...), strings.NewReader(""), &out, &errb, env{clock: clock.Real{}, getenv: getenv}); code != 0 {
		t.Fatalf("-p: exit %d: %s", code, errb.String())
	}
	r := startRun(t, getenv, append([]string{"--stdio"}, flags...)...)
	r.send(`{"cmd":"user","text":"one"}`, "done")
	writeFile(t, filepath.Join(project, ".openmax/skills/deploy.md"), "Deploy with make deploy.\n")
	r.send(`{"cmd":"user","text":"two"}`, "done")
	r.send(`{"cmd":"reload"}`, "refrozen")
	r.send(`{"cmd":"user","text":"three"}`, "done")
	if code := r.finish(); code != 0 {
		t.Fatalf("exit %d", code)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(systems) != 4 {
		t.Fatalf("%d requests, want 4", len(systems))
	}
	for i, s := range systems {
		if !strings.Contains(s, "Answer in French.") || !strings.Contains(s, "## Skill: review") || !strings.Contains(s, "Review diffs line by line.") {
			t.Errorf("request %d: system prompt %s", i+1, s)
		}
		if got, want := strings.Contains(s, "Deploy with make deploy."), i == 3; got != want {
			t.Errorf("request %d: the skill added mid-session seen %v, want %v (only after reload)", i+1, got, want)
		}
	}
}

// TestSkillsRecordReplay: a session recorded in a project with skills
// replays without the project's files: the recording keeps the frozen
// system prompt (Config.System), so the replayed requests match.
func TestSkillsRecordReplay(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, `data: {"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"ok"},"finish_reason":"stop"}]}`+"\n\ndata: [DONE]\n\n")
	}))
	defer srv.Close()
	project := t.TempDir()
	writeFile(t, filepath.Join(project, ".openmax/skills/review.md"), "Review diffs line by line.\n")
	cas := filepath.Join(t.TempDir(), "c.yaml")
	getenv := trustedEnv(t, func(k string) string {
		if k == "OPENAI_API_KEY" {
			return testOpenAIKey
		}
		return ""
	}, project)
	cli := func(stdin string, args ...string) (string, string, int) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		var out, errb bytes.Buffer
		code := run(ctx, args, strings.NewReader(stdin), &out, &errb, env{clock: clock.Real{}, getenv: getenv})
		return out.String(), errb.String(), code
	}
	rec, stderr, code := cli(`{"cmd":"user","text":"hi"}`+"\n", "record", "--cassette", cas, "--provider", "openai", "--base-url", srv.URL+"/v1", "--project", project, "--session-id", "s")
	if code != 0 || !strings.Contains(rec, `"stop_reason":"stop"`) {
		t.Fatalf("record: exit %d\n%s\n%s", code, rec, stderr)
	}
	if err := os.RemoveAll(filepath.Join(project, ".openmax")); err != nil {
		t.Fatal(err)
	}
	rep, stderr, code := cli("", "replay", cas)
	if code != 0 || !strings.Contains(rep, `"stop_reason":"stop"`) {
		t.Fatalf("replay: exit %d\n%s\n%s", code, rep, stderr)
	}
}
