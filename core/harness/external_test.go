package harness_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openmax/openmax/core/config"
	"github.com/openmax/openmax/core/harness"
	"github.com/openmax/openmax/core/stdio"
	"github.com/openmax/openmax/provider/clock"
)

// The external tool of these tests: a shell script (run by /bin/sh, named
// in the manifest) that prints its arguments and its whole environment.
const (
	showManifestPath = ".openmax/tools/show.json"
	showCodePath     = "tools/show.sh"
	showManifest     = `{"description": "shows its input and environment", "code": "tools/show.sh", "interpreter": ["/bin/sh"], "env": ["GRANTED"]}`
)

func sha12(data []byte) string {
	s := sha256.Sum256(data)
	return hex.EncodeToString(s[:])[:12]
}

// extWorld is a trusted project holding the show tool, with an environment
// carrying a granted variable, a provider key and another variable.
func extWorld(t *testing.T, mode string, files map[string]string) world {
	t.Helper()
	w := newWorld(t, true)
	w.env["PATH"] = os.Getenv("PATH")
	w.env["HOME"] = "/home/tester"
	w.env["GRANTED"] = "granted-value"
	w.env["OPENAI_API_KEY"] = "sk-must-not-leak"
	w.env["OTHER"] = "other-value"
	code, err := os.ReadFile("testdata/exttools/show.sh")
	if err != nil {
		t.Fatal(err)
	}
	all := map[string]string{showManifestPath: showManifest, showCodePath: string(code)}
	for k, v := range files {
		all[k] = v
	}
	for name, content := range all {
		p := filepath.Join(w.project, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if mode != "" {
		dir, _ := config.Dir(w.getenv)
		p, err := config.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.SetMode(w.project, mode); err != nil {
			t.Fatal(err)
		}
	}
	return w
}

// session is a client of one served session over an in-memory pipe.
type session struct {
	t    *testing.T
	c    *stdio.PipeClient
	done chan struct{}
	all  []string
}

// serve starts a session of the script provider playing scenario (YAML).
func (w world) serve(t *testing.T, scenario string, c clock.Clock) *session {
	t.Helper()
	sc := filepath.Join(t.TempDir(), "scenario.yaml")
	if err := os.WriteFile(sc, []byte(scenario), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := harness.Defaults()
	cfg.Provider, cfg.Script, cfg.Project, cfg.SessionID = "script", sc, w.project, "s1"
	h, err := harness.New(cfg, harness.Deps{Getenv: w.getenv, Clock: c})
	if err != nil {
		t.Fatal(err)
	}
	server, client := stdio.NewPipe()
	s := &session{t: t, c: client, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		if _, err := h.ServeConn(context.Background(), server, harness.ServeOptions{NoSave: true}); err != nil {
			t.Error(err)
		}
	}()
	t.Cleanup(func() {
		client.CloseWrite()
		<-s.done
	})
	s.next("hello")
	return s
}

func (s *session) send(line string) {
	s.t.Helper()
	if err := s.c.WriteLine([]byte(line)); err != nil {
		s.t.Fatal(err)
	}
}

// line is one event line, decoded, with its raw text.
type line struct {
	raw string
	m   map[string]any
}

func (l line) str(k string) string { v, _ := l.m[k].(string); return v }

// next reads lines until one of type typ and returns it; any line of a
// type in avoid on the way fails the test.
func (s *session) next(typ string, avoid ...string) line {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for {
		raw, err := s.c.ReadLine(ctx)
		if err != nil {
			s.t.Fatalf("waiting for %s: %v; lines so far:\n%s", typ, err, strings.Join(s.all, "\n"))
		}
		s.all = append(s.all, string(raw))
		var m map[string]any
		if err := json.Unmarshal(raw, &m); err != nil {
			s.t.Fatalf("not JSON: %s", raw)
		}
		got, _ := m["type"].(string)
		for _, a := range avoid {
			if got == a {
				s.t.Fatalf("unexpected %s while waiting for %s: %s", a, typ, raw)
			}
		}
		if got == typ {
			return line{raw: string(raw), m: m}
		}
	}
}

// approve answers the approval request r.
func (s *session) approve(r line, yes bool) {
	s.t.Helper()
	b, _ := json.Marshal(map[string]any{"cmd": "approve", "approval_id": r.str("approval_id"), "approved": yes})
	s.send(string(b))
}

// turns is a scenario of one show call per turn, each followed by a text.
func turns(n int) string {
	var b strings.Builder
	b.WriteString("replies:\n")
	for i := 1; i <= n; i++ {
		id := "c" + string(rune('0'+i))
		b.WriteString("  - tool_calls: [{id: " + id + ", name: show, args: {n: " + string(rune('0'+i)) + "}}]\n")
		b.WriteString("  - text: \"ok\"\n")
	}
	return b.String()
}

func checkSourceRequest(t *testing.T, r line, path, sha string) {
	t.Helper()
	env, _ := json.Marshal(r.m["env"])
	if r.str("reason") != "unapproved_source" || r.str("source_path") != path || r.str("source_sha") != sha || string(env) != `["GRANTED"]` {
		t.Errorf("approval_request %s\nwant reason unapproved_source, source_path %s, source_sha %s, env [GRANTED]", r.raw, path, sha)
	}
}

func TestExternalToolApprovalOverTheWire(t *testing.T) {
	w := extWorld(t, "ask", nil)
	code, _ := os.ReadFile(filepath.Join(w.project, showCodePath))
	s := w.serve(t, turns(3), nil)

	// First call: the manifest, then the code, each asked for by its bytes.
	s.send(`{"cmd":"user","text":"show"}`)
	r := s.next("approval_request", "tool_end")
	checkSourceRequest(t, r, showManifestPath, sha12([]byte(showManifest)))
	if r.str("approval_id") != "approve-c1" {
		t.Errorf("first request id %q", r.str("approval_id"))
	}
	s.approve(r, true)
	r = s.next("approval_request", "tool_end")
	checkSourceRequest(t, r, showCodePath, sha12(code))
	s.approve(r, true)
	end := s.next("tool_end", "approval_request")
	out := end.str("output")
	if end.m["ok"] != true || !strings.Contains(out, `args: {"n":1}`) {
		t.Fatalf("approved call: %s", end.raw)
	}
	for _, want := range []string{"GRANTED=granted-value", "HOME=/home/tester", "PATH=", "OPENMAX_AGENT_SPAWNED=1"} {
		if !strings.Contains(out, want) {
			t.Errorf("the tool did not get %s:\n%s", want, out)
		}
	}
	for _, leak := range []string{"sk-must-not-leak", "OTHER=", "OPENAI_API_KEY", "XDG_CONFIG_HOME"} {
		if strings.Contains(out, leak) {
			t.Errorf("%s reached the tool:\n%s", leak, out)
		}
	}
	s.next("done")

	// Same bytes: no unapproved_source; ask mode gates the call as it
	// gates every mutating one, and a gate request carries no env key.
	s.send(`{"cmd":"user","text":"again"}`)
	r = s.next("approval_request", "tool_end")
	if r.str("reason") != "gate" || strings.Contains(r.raw, `"env"`) || r.str("source_path") != "" {
		t.Errorf("second call's request: %s, want a gate request without env", r.raw)
	}
	s.approve(r, true)
	if end := s.next("tool_end", "approval_request"); end.m["ok"] != true {
		t.Errorf("second call: %s", end.raw)
	}
	s.next("done")

	// One changed byte of the code asks again with the new sha; declining
	// refuses the call.
	changed := append(code, '\n')
	if err := os.WriteFile(filepath.Join(w.project, showCodePath), changed, 0o644); err != nil {
		t.Fatal(err)
	}
	s.send(`{"cmd":"user","text":"changed"}`)
	r = s.next("approval_request", "tool_end")
	checkSourceRequest(t, r, showCodePath, sha12(changed))
	if sha12(changed) == sha12(code) {
		t.Fatal("the change did not change the sha")
	}
	s.approve(r, false)
	settled := s.next("approval_settled")
	end = s.next("tool_end", "approval_request")
	if settled.str("outcome") != "declined" || end.m["ok"] != false || end.str("output") != "not run: the call was declined" {
		t.Errorf("declined: %s %s", settled.raw, end.raw)
	}
	s.next("done")
}

func TestExternalToolModes(t *testing.T) {
	noGrant := map[string]string{showManifestPath: strings.Replace(showManifest, `, "env": ["GRANTED"]`, "", 1)}
	cases := []struct {
		name   string
		mode   string
		files  map[string]string
		ok     bool
		output string
	}{
		// In auto nothing is asked, new extension content included...
		{"auto", "auto", noGrant, true, `args: {"n":1}`},
		// ...but a credential grant needs a human's approval of the bytes.
		{"auto with a credential grant", "auto", nil, false, "not run: show is granted GRANTED by its manifest, and in auto mode a tool granted credentials runs only on bytes a human approved"},
		{"readonly", "readonly", nil, false, "not run: show changes the project, and the approval mode is readonly"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := extWorld(t, c.mode, c.files)
			s := w.serve(t, turns(1), nil)
			s.send(`{"cmd":"user","text":"show"}`)
			end := s.next("tool_end", "approval_request")
			if end.m["ok"] != c.ok || !strings.Contains(end.str("output"), c.output) {
				t.Errorf("tool_end %s, want ok %v and %q", end.raw, c.ok, c.output)
			}
			s.next("done", "approval_request")
		})
	}
}

func TestApproveFromTheTerminal(t *testing.T) {
	w := extWorld(t, "ask", nil)
	for _, p := range []string{showManifestPath, filepath.Join(w.project, showCodePath)} {
		got, err := harness.ApproveSource(w.project, p, w.getenv)
		if err != nil {
			t.Fatal(err)
		}
		data, _ := os.ReadFile(filepath.Join(w.project, filepath.FromSlash(got.Path)))
		if got.Sum[:12] != sha12(data) || strings.HasPrefix(got.Path, "/") {
			t.Errorf("approved %+v", got)
		}
	}
	if _, err := harness.ApproveSource(w.project, "../outside.sh", w.getenv); err == nil {
		t.Error("a path outside the project was approved")
	}
	s := w.serve(t, turns(1), nil)
	s.send(`{"cmd":"user","text":"show"}`)
	r := s.next("approval_request", "tool_end")
	if r.str("reason") != "gate" {
		t.Fatalf("after --approve of both files: %s, want only the gate", r.raw)
	}
	s.approve(r, true)
	if end := s.next("tool_end", "approval_request"); end.m["ok"] != true {
		t.Errorf("tool_end %s", end.raw)
	}
}

func TestDenyRulesInEveryMode(t *testing.T) {
	policy := `{"deny": [
  {"tool": "run_command", "args_match": "\"rm\"", "reason": "no deleting"},
  {"tool": "show"}
]}`
	scenario := `replies:
  - tool_calls:
      - {id: c1, name: run_command, args: {argv: ["\u0072m", "-rf", "x"]}}
      - {id: c2, name: show, args: {}}
      - {id: c3, name: read_file, args: {path: "x.txt"}}
  - text: "ok"
`
	for _, mode := range []string{"auto", "ask", "readonly"} {
		t.Run(mode, func(t *testing.T) {
			w := extWorld(t, mode, map[string]string{".openmax/policy.json": policy, "x.txt": "kept\n"})
			s := w.serve(t, scenario, nil)
			s.send(`{"cmd":"user","text":"go"}`)
			pol := filepath.Join(w.project, ".openmax", "policy.json")
			for _, want := range []string{
				"not run: denied by " + pol + " rule 1 (tool run_command, args matching \"\\\"rm\\\"\"): no deleting",
				"not run: denied by " + pol + " rule 2 (tool show)",
			} {
				end := s.next("tool_end", "approval_request")
				if end.m["ok"] != false || end.str("output") != want {
					t.Errorf("tool_end %s\nwant output %q", end.raw, want)
				}
			}
			if end := s.next("tool_end", "approval_request"); end.m["ok"] != true {
				t.Errorf("a call no rule matches: %s", end.raw)
			}
			s.next("done")
			if _, err := os.Stat(filepath.Join(w.project, "x.txt")); err != nil {
				t.Error("the denied command ran")
			}
		})
	}
}

func TestUnreadablePolicyRefusesEveryCall(t *testing.T) {
	w := extWorld(t, "auto", map[string]string{".openmax/policy.json": `{"deny": [{"tool": "x", "typo": 1}]}`})
	s := w.serve(t, turns(1), nil)
	s.send(`{"cmd":"user","text":"show"}`)
	end := s.next("tool_end", "approval_request")
	if end.m["ok"] != false || !strings.Contains(end.str("output"), "unreadable") || !strings.Contains(end.str("output"), "every tool call is refused") {
		t.Errorf("tool_end %s", end.raw)
	}
}

// A call that never ends on its own still ends the session after EOF: the
// tool's timeout (on the harness's clock) kills it, the turn ends, and the
// drain finishes.
func TestEOFDrainIsBoundedByTheToolTimeout(t *testing.T) {
	hang, err := os.ReadFile("testdata/exttools/hang.sh")
	if err != nil {
		t.Fatal(err)
	}
	w := extWorld(t, "auto", map[string]string{
		".openmax/tools/hang.json": `{"code": "hang.sh", "interpreter": ["/bin/sh"], "timeout_seconds": 5}`,
		"hang.sh":                  string(hang),
	})
	fake := clock.NewFake(time.Unix(0, 0))
	s := w.serve(t, "replies:\n  - tool_calls: [{id: c1, name: hang, args: {}}]\n  - text: \"ok\"\n", fake)
	s.send(`{"cmd":"user","text":"hang"}`)
	s.c.CloseWrite()
	s.next("tool_start")
	if err := fake.BlockUntil(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	fake.Advance(5 * time.Second)
	end := s.next("tool_end")
	if end.m["ok"] != false || !strings.HasSuffix(end.str("output"), "[killed: timed out after 5s]") {
		t.Errorf("tool_end %s", end.raw)
	}
	s.next("done")
	<-s.done
}

// A code file rewritten while its approval is pending is asked for again
// with its new bytes: the approval covers the bytes the human was shown.
func TestSwapWhilePendingAsksAgain(t *testing.T) {
	w := extWorld(t, "ask", nil)
	s := w.serve(t, turns(1), nil)
	s.send(`{"cmd":"user","text":"show"}`)
	s.approve(s.next("approval_request", "tool_end"), true) // the manifest
	r := s.next("approval_request", "tool_end")
	swapped := []byte("echo swapped\n")
	if err := os.WriteFile(filepath.Join(w.project, showCodePath), swapped, 0o644); err != nil {
		t.Fatal(err)
	}
	s.approve(r, true)
	r = s.next("approval_request", "tool_end")
	checkSourceRequest(t, r, showCodePath, sha12(swapped))
	if r.str("approval_id") != "approve-c1#3" {
		t.Errorf("id %q", r.str("approval_id"))
	}
	s.approve(r, true)
	if end := s.next("tool_end", "approval_request"); end.m["ok"] != true || end.str("output") != "swapped\n" {
		t.Errorf("tool_end %s", end.raw)
	}
}

// A tool that forwards no variable carries no env key on its request.
func TestNoEnvGrantOmitsEnv(t *testing.T) {
	w := extWorld(t, "ask", map[string]string{showManifestPath: `{"code": "tools/show.sh", "interpreter": ["/bin/sh"]}`})
	s := w.serve(t, turns(1), nil)
	s.send(`{"cmd":"user","text":"show"}`)
	r := s.next("approval_request", "tool_end")
	if r.str("reason") != "unapproved_source" || strings.Contains(r.raw, `"env"`) {
		t.Errorf("request %s, want unapproved_source without an env key", r.raw)
	}
	s.approve(r, true)
	s.approve(s.next("approval_request", "tool_end"), true)
	if end := s.next("tool_end", "approval_request"); end.m["ok"] != true || strings.Contains(end.str("output"), "GRANTED") {
		t.Errorf("tool_end %s", end.raw)
	}
}

// A manifest that does not load, or whose name a built-in tool has, is
// left out and named on the log; the others load.
func TestExternalToolsLeftOutAreLogged(t *testing.T) {
	w := extWorld(t, "auto", map[string]string{
		".openmax/tools/read_file.json": `{"code": "tools/show.sh"}`,
		".openmax/tools/broken.json":    `{"code": `,
	})
	var log strings.Builder
	cfg := harness.Defaults()
	cfg.Provider, cfg.Project = "echo", w.project
	h, err := harness.New(cfg, harness.Deps{Getenv: w.getenv, Log: &log})
	if err != nil {
		t.Fatal(err)
	}
	names := strings.Join(h.Engine().Tools.Names(), " ")
	if !strings.HasSuffix(names, " show") || strings.Count(names, "read_file") != 1 || strings.Contains(names, "broken") {
		t.Errorf("tools %s", names)
	}
	for _, want := range []string{"external tool read_file: the name is taken", "external tool .openmax/tools/broken.json: not a valid manifest"} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, log.String())
		}
	}
}
