package tape_test

import (
	"bytes"
	"context"
	"encoding/json"
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

	vcr "github.com/dnaeon/go-vcr/v2/cassette"

	"github.com/openmax/openmax/core/harness"
	"github.com/openmax/openmax/recorder"
	"github.com/openmax/openmax/recorder/cassette"
	"github.com/openmax/openmax/replay/tape"
)

// chatServer is an OpenAI chat completions server over loopback: it
// answers each request with the next of replies (SSE bodies) and keeps
// the request bodies.
type chatServer struct {
	mu      sync.Mutex
	replies []string
	bodies  []string
}

func (s *chatServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	n := len(s.bodies)
	s.bodies = append(s.bodies, string(body))
	s.mu.Unlock()
	reply := `data: {"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"extra"},"finish_reason":"stop"}]}` + "\n\n"
	if n < len(s.replies) {
		reply = s.replies[n]
	}
	w.Header().Set("Content-Type", "text/event-stream")
	io.WriteString(w, reply+"data: [DONE]\n\n")
}

func textReply(text string) string {
	return `data: {"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"` + text + `"},"finish_reason":"stop"}]}` + "\n\n"
}

func callReply(name, args string) string {
	call, _ := json.Marshal(map[string]any{"index": 0, "id": "c1", "type": "function", "function": map[string]string{"name": name, "arguments": args}})
	return `data: {"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"tool_calls":[` + string(call) + `]},"finish_reason":null}]}` + "\n\n" +
		`data: {"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}` + "\n\n"
}

// reloadClient is the client's stdout: at each line it may act (change
// the project's files, send the next command), step by step.
type reloadClient struct {
	steps   []reloadStep
	in      *io.PipeWriter
	out     bytes.Buffer
	pending []byte
}

// reloadStep waits for a line of type after, then runs do and sends
// cmd ("" closes stdin).
type reloadStep struct {
	after string
	do    func()
	cmd   string
}

func (c *reloadClient) Write(p []byte) (int, error) {
	c.out.Write(p)
	c.pending = append(c.pending, p...)
	for {
		i := bytes.IndexByte(c.pending, '\n')
		if i < 0 {
			return len(p), nil
		}
		line := string(c.pending[:i])
		c.pending = c.pending[i+1:]
		if len(c.steps) == 0 || !strings.Contains(line, `"type":"`+c.steps[0].after+`"`) {
			continue
		}
		s := c.steps[0]
		c.steps = c.steps[1:]
		if s.do != nil {
			s.do()
		}
		if s.cmd == "" {
			c.in.Close()
			continue
		}
		go io.WriteString(c.in, s.cmd+"\n")
	}
}

func writeProjectFile(t *testing.T, project, rel, text string) {
	t.Helper()
	path := filepath.Join(project, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestReloadRecordReplay: a session records a turn, then the project gets
// a skill and an external tool and the client sends reload, then a second
// turn whose model reads a file. The cassette keeps what the reload froze,
// so with the skill, the tool and the file gone the replay prints the
// recorded transcript byte for byte, its requests match the recorded ones
// (the second turn's system prompt carries the skill, its tools the new
// one), and nothing is left over. Without the recorded reload the second
// turn's request no longer matches.
func TestReloadRecordReplay(t *testing.T) {
	for _, v := range []struct {
		name  string
		call  string       // the second turn's tool call
		steps []reloadStep // the client's answers during it
		want  string       // in the tool's result
	}{
		{"a built-in tool reads a file", callReply("read_file", `{"path":"notes.txt"}`), nil, "remember the milk"},
		{"the new external tool runs once approved", callReply("lint", `{}`), []reloadStep{
			{after: "approval_request", cmd: `{"cmd":"approve","approval_id":"approve-c1","approved":true}`},
			{after: "approval_request", cmd: `{"cmd":"approve","approval_id":"approve-c1#2","approved":true}`},
		}, `"output":"clean\n"`},
	} {
		t.Run(v.name, func(t *testing.T) { testReloadRecordReplay(t, v.call, v.steps, v.want) })
	}
}

func testReloadRecordReplay(t *testing.T, call string, answers []reloadStep, want string) {
	project := t.TempDir()
	conf := t.TempDir()
	getenv := func(k string) string {
		switch k {
		case "XDG_CONFIG_HOME":
			return conf
		case "OPENAI_API_KEY":
			return "sk-test-reload"
		}
		return ""
	}
	if _, err := harness.Trust(project, getenv); err != nil {
		t.Fatal(err)
	}
	const skill = "Review diffs line by line."
	srv := &chatServer{replies: []string{textReply("one"), call, textReply("two")}}
	hs := httptest.NewServer(srv)
	defer hs.Close()

	cfg := harness.Defaults()
	cfg.Provider, cfg.BaseURL, cfg.Project, cfg.SessionID = "openai", hs.URL+"/v1", project, "s-reload"
	path := filepath.Join(t.TempDir(), "reload.yaml")
	inR, inW := io.Pipe()
	client := &reloadClient{in: inW, steps: []reloadStep{
		{after: "hello", cmd: `{"cmd":"user","text":"first"}`},
		{after: "done", do: func() {
			writeProjectFile(t, project, ".openmax/skills/review.md", skill+"\n")
			writeProjectFile(t, project, ".openmax/tools/lint.json", `{"description":"Lints the project.","code":"lint.sh","interpreter":["/bin/sh"]}`)
			writeProjectFile(t, project, "lint.sh", "echo clean\n")
			writeProjectFile(t, project, "notes.txt", "remember the milk\n")
		}, cmd: `{"cmd":"reload"}`},
		{after: "refrozen", cmd: `{"cmd":"user","text":"second"}`},
	}}
	client.steps = append(append(client.steps, answers...), reloadStep{after: "done"})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	code, err := tape.Record(ctx, inR, client, tape.RecordOptions{Config: cfg, Deps: harness.Deps{Getenv: getenv}, Cassette: recorder.Options{Path: path}})
	if err != nil {
		t.Fatal(err)
	}
	recorded := client.out.Bytes()
	for _, want := range []string{`"type":"refrozen"`, `skill review: added (.openmax/skills/review.md)`, `tool lint: added (.openmax/tools/lint.json)`, `"type":"harness_note"`, want} {
		if !bytes.Contains(recorded, []byte(want)) {
			t.Fatalf("the live session lacks %q:\n%s", want, recorded)
		}
	}
	if len(srv.bodies) != 3 || strings.Contains(srv.bodies[0], skill) || !strings.Contains(srv.bodies[1], skill) || !strings.Contains(srv.bodies[1], `"lint"`) {
		t.Fatalf("live requests: want the skill and the tool from the second on:\n%s", strings.Join(srv.bodies, "\n"))
	}

	f, err := cassette.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := vcr.Load(strings.TrimSuffix(path, ".yaml")); err != nil {
		t.Fatalf("stock go-vcr: %v", err)
	}
	if n := len(f.Session.Reloads); n != 1 {
		t.Fatalf("%d reloads recorded, want 1", n)
	}
	if r := f.Session.Reloads[0]; !strings.Contains(r.System, skill) || r.Note == "" || len(r.Offered) != len(r.Tools) {
		t.Errorf("the recorded reload: %+v", r)
	}
	lint := slices.IndexFunc(f.Session.Reloads[0].Offered, func(tl cassette.Tool) bool { return tl.Name == "lint" })
	if lint < 0 || f.Session.Reloads[0].Offered[lint].Source == nil {
		t.Fatalf("the reload's tools lack the external tool lint with its source gate: %+v", f.Session.Reloads[0].Offered)
	}
	if checks := len(f.Session.Reloads[0].Offered[lint].Source.Checks); strings.Contains(call, "lint") != (checks > 0) {
		t.Errorf("lint's recorded source checks: %d", checks)
	}
	if strings.Contains(call, "lint") && !bytes.Contains(recorded, []byte(`"reason":"unapproved_source"`)) {
		t.Errorf("lint ran without asking for its unapproved files:\n%s", recorded)
	}
	for _, rel := range []string{".openmax", "lint.sh", "notes.txt"} {
		if err := os.RemoveAll(filepath.Join(project, rel)); err != nil {
			t.Fatal(err)
		}
	}

	res, err := tape.Replay(ctx, f, tape.ReplayOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p := res.Problems(false); len(p) > 0 {
		t.Errorf("replay problems: %q", p)
	}
	if !bytes.Equal(res.Stdout, recorded) || res.Exit != code {
		t.Errorf("the replay differs from the recording (exit %d, recorded %d):\n--- replay\n%s--- recording\n%s", res.Exit, code, res.Stdout, recorded)
	}

	// Replays that do not reproduce the recorded reloads, each a problem
	// of the replay: without the recorded reload (as a cassette recorded
	// before reloads were kept: the reload replays as it used to, and the
	// second turn's request, with the first prompt and tools, is not in
	// the recording), a reload more than recorded, a recorded reload never
	// made.
	for _, tc := range []struct {
		name   string
		change func(s *cassette.Session)
		misses bool
		want   string // in the reload problems; "" for none
	}{
		{"no recorded reloads", func(s *cassette.Session) { s.Reloads = nil }, true, ""},
		{"a reload more", func(s *cassette.Session) {
			i := slices.IndexFunc(s.Commands, func(c cassette.Command) bool { return strings.Contains(c.Line, "reload") })
			s.Commands = slices.Insert(s.Commands, i+1, s.Commands[i])
		}, false, "reload 2 is not in the recording"},
		{"a recorded reload never made", func(s *cassette.Session) { s.Reloads = append(s.Reloads, s.Reloads[0]) }, false, "1 recorded reload(s) never made, from reload 2 on"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, err := cassette.Load(path)
			if err != nil {
				t.Fatal(err)
			}
			tc.change(g.Session)
			res, err := tape.Replay(ctx, g, tape.ReplayOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got := len(res.Misses) > 0; got != tc.misses {
				t.Errorf("misses %q, want some: %v", res.Misses, tc.misses)
			}
			if got := strings.Join(res.Reloads, "\n"); (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Errorf("reload problems %q, want %q", res.Reloads, tc.want)
			}
			if tc.want != "" && !slices.Contains(res.Problems(true), res.Reloads[0]) {
				t.Errorf("Problems leaves out the reload problems: %q", res.Problems(true))
			}
		})
	}
}
