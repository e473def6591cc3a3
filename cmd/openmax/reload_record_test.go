package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openmax/openmax/provider/clock"
	"github.com/openmax/openmax/recorder/cassette"
)

// TestReloadRecordReplayCLI: `openmax record` of a session whose reload
// added a skill and an external tool between two turns, then
// `openmax replay` of it with those files gone, prints the recorded
// transcript byte for byte and exits 0 (every request matched: the second
// carries the skill); the same cassette with one reload more than it
// recorded fails the replay, naming the reload.
func TestReloadRecordReplayCLI(t *testing.T) {
	const skill = "Review diffs line by line."
	var mu sync.Mutex
	var bodies []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, string(body))
		n := len(bodies)
		mu.Unlock()
		text := map[bool]string{true: "one", false: "two"}[n == 1]
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, `data: {"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"`+text+`"},"finish_reason":"stop"}]}`+"\n\ndata: [DONE]\n\n")
	}))
	defer srv.Close()
	project := t.TempDir()
	getenv := trustedEnv(t, func(k string) string {
		if k == "OPENAI_API_KEY" {
			return testOpenAIKey
		}
		return ""
	}, project)
	cas := filepath.Join(t.TempDir(), "reload.yaml")

	r := startRun(t, getenv, "record", "--cassette", cas, "--provider", "openai", "--base-url", srv.URL+"/v1", "--project", project, "--session-id", "s")
	r.send(`{"cmd":"user","text":"first"}`, "done")
	writeFile(t, filepath.Join(project, ".openmax/skills/review.md"), skill+"\n")
	writeFile(t, filepath.Join(project, ".openmax/tools/lint.sh"), "echo ok\n")
	writeFile(t, filepath.Join(project, ".openmax/tools/lint.json"), `{"description":"lint the project","code":".openmax/tools/lint.sh","interpreter":["/bin/sh"]}`)
	if got := strs(r.send(`{"cmd":"reload"}`, "refrozen")[0]["changes"]); len(got) != 2 {
		t.Fatalf("changes %q, want the tool and the skill added", got)
	}
	r.send(`{"cmd":"user","text":"second"}`, "done")
	if code := r.finish(); code != 0 {
		t.Fatalf("record: exit %d", code)
	}
	recorded := strings.Join(r.lines, "\n") + "\n"
	if len(bodies) != 2 || strings.Contains(bodies[0], skill) || !strings.Contains(bodies[1], skill) {
		t.Fatalf("live requests: want the skill in the second only:\n%s", strings.Join(bodies, "\n"))
	}
	if err := os.RemoveAll(filepath.Join(project, ".openmax")); err != nil {
		t.Fatal(err)
	}

	replay := func(path string) (string, string, int) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		var out, errb bytes.Buffer
		code := run(ctx, []string{"replay", path}, strings.NewReader(""), &out, &errb, env{clock: clock.Real{}, getenv: getenv})
		return out.String(), errb.String(), code
	}
	out, stderr, code := replay(cas)
	if code != 0 || out != recorded {
		t.Errorf("replay: exit %d (%s)\n--- replay\n%s--- recording\n%s", code, stderr, out, recorded)
	}

	f, err := cassette.Load(cas)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(f.Session.Commands, func(c cassette.Command) bool { return strings.Contains(c.Line, `"reload"`) })
	f.Session.Commands = slices.Insert(f.Session.Commands, i+1, f.Session.Commands[i])
	more := filepath.Join(t.TempDir(), "more.yaml")
	if err := f.Save(more); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := replay(more); code != 1 || !strings.Contains(stderr, "reload 2 is not in the recording") {
		t.Errorf("a reload more than recorded: exit %d, stderr:\n%s", code, stderr)
	}
}
