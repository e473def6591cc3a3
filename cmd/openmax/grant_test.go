package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// The external tool of the credential grant tests: granted
// OPENAI_API_KEY, it prints the key and leaves a copy in granted.txt, for
// run_command to read back.
const (
	grantKey      = "sk-proj-GRANTEDKEY0123456789"
	grantMarker   = "GRANTEDKEY"
	grantManifest = `{"description": "prints its key", "code": "leak.sh", "interpreter": ["/bin/sh"], "env": ["OPENAI_API_KEY"]}`
	grantCode     = "printf 'key=%s\\n' \"$OPENAI_API_KEY\"\nprintf '%s' \"$OPENAI_API_KEY\" > granted.txt\n"
)

// grantProject is a project holding the leak tool (with manifest, when
// given, in place of grantManifest).
func grantProject(t *testing.T, manifest string) string {
	t.Helper()
	dir := t.TempDir()
	if manifest == "" {
		manifest = grantManifest
	}
	writeFile(t, filepath.Join(dir, ".openmax", "tools", "leak.json"), manifest)
	writeFile(t, filepath.Join(dir, "leak.sh"), grantCode)
	return dir
}

// approveFiles runs `openmax --approve` on files, as a human at a terminal.
func approveFiles(t *testing.T, ctx context.Context, bin, project string, env []string, files ...string) {
	t.Helper()
	cmd := exec.CommandContext(ctx, bin, append(append([]string{"--approve"}, files...), "--project", project)...)
	cmd.Env = env
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("openmax --approve: %v\n%s", err, out)
	}
}

// TestGrantedKeyNeverWritten: a human approved an external tool granted
// OPENAI_API_KEY that prints the key and leaves it in a file, which
// run_command then reads. Neither stdout, stderr, the session file, the
// cassette, any other file openmax wrote, nor the next request to the
// model may carry the key; the tool_end lines show [redacted] where it was.
func TestGrantedKeyNeverWritten(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary; skipped in -short mode")
	}
	bin := buildBinary(t)
	cases := []struct {
		name string
		args func(cassette string) []string
	}{
		{"stdio", func(string) []string { return []string{"--stdio"} }},
		{"record", func(cas string) []string { return []string{"record", "--cassette", cas} }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var mu sync.Mutex
			var bodies []string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				body, _ := io.ReadAll(r.Body)
				mu.Lock()
				bodies = append(bodies, string(body))
				n := len(bodies)
				mu.Unlock()
				w.Header().Set("Content-Type", "text/event-stream")
				if n == 1 {
					fmt.Fprint(w, sse(
						`{"choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"leak","arguments":"{}"}}]},"finish_reason":null}]}`,
						`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"c2","type":"function","function":{"name":"run_command","arguments":"{\"argv\":[\"cat\",\"granted.txt\"]}"}}]},"finish_reason":null}]}`,
						`{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`, "[DONE]"))
					return
				}
				fmt.Fprint(w, sse(`{"choices":[{"index":0,"delta":{"role":"assistant","content":"done"},"finish_reason":null}]}`,
					`{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`, "[DONE]"))
			}))
			defer srv.Close()

			project, state, casDir := grantProject(t, ""), t.TempDir(), t.TempDir()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			env := trustedBinaryEnv(t, ctx, bin, project, state, "OPENAI_API_KEY="+grantKey)
			approveFiles(t, ctx, bin, project, env, ".openmax/tools/leak.json", "leak.sh")
			args := append(c.args(filepath.Join(casDir, "c.yaml")), "--provider", "openai", "--base-url", srv.URL+"/v1", "--project", project)
			cmd := exec.CommandContext(ctx, bin, args...)
			cmd.Env = env
			cmd.Stdin = strings.NewReader(`{"cmd":"approval_mode","mode":"auto"}` + "\n" + `{"cmd":"user","text":"leak it"}` + "\n")
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				t.Fatalf("exit: %v\nstderr: %s", err, stderr.String())
			}

			// The tool ran with its key and printed it: what came out is
			// the redacted form.
			ends := map[string]string{}
			for _, line := range strings.Split(strings.TrimSpace(stdout.String()), "\n") {
				var ev struct {
					Type   string
					CallID string `json:"call_id"`
					Output string
				}
				if json.Unmarshal([]byte(line), &ev) == nil && ev.Type == "tool_end" {
					ends[ev.CallID] = ev.Output
				}
			}
			if ends["c1"] != "key=[redacted]\n" || !strings.HasPrefix(ends["c2"], "[redacted]\n") {
				t.Errorf("tool_end outputs %q, want c1 %q and c2 starting %q\nstdout:\n%s", ends, "key=[redacted]\n", "[redacted]\n", stdout.String())
			}
			if got, _ := os.ReadFile(filepath.Join(project, "granted.txt")); string(got) != grantKey {
				t.Fatalf("the tool did not get its granted key (granted.txt holds %q)", got)
			}
			mu.Lock()
			sent := bodies
			mu.Unlock()
			if len(sent) != 2 || !strings.Contains(sent[1], "key=[redacted]") {
				t.Errorf("%d requests; the second should carry the redacted result:\n%s", len(sent), strings.Join(sent, "\n"))
			}
			streams := map[string]string{"stdout": stdout.String(), "stderr": stderr.String()}
			for i, b := range sent {
				streams[fmt.Sprintf("request %d to the model", i+1)] = b
			}
			for name, s := range streams {
				if n := strings.Count(s, grantMarker); n > 0 {
					t.Errorf("%s carries the key %d times:\n%s", name, n, s)
				}
			}
			written := 0
			for _, dir := range []string{state, casDir, project, configDir(env)} {
				written += scanForKey(t, dir, filepath.Join(project, "granted.txt"))
			}
			if written == 0 {
				t.Fatal("openmax wrote no file (the session file or the cassette should be there)")
			}
		})
	}
}

// configDir is XDG_CONFIG_HOME of env.
func configDir(env []string) string {
	dir := envValue(env, "XDG_CONFIG_HOME")
	return dir
}

// scanForKey fails the test for every file under dir (but skip, the tool's
// own copy) that carries the key, and returns how many files it read.
func scanForKey(t *testing.T, dir, skip string) int {
	t.Helper()
	n := 0
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || path == skip {
			return err
		}
		n++
		data, err := os.ReadFile(path)
		if n := bytes.Count(data, []byte(grantMarker)); err == nil && n > 0 {
			t.Errorf("%s carries the key %d times:\n%s", path, n, data)
		}
		return err
	})
	if err != nil {
		t.Fatalf("walking %s: %v", dir, err)
	}
	return n
}

// TestAutoModeCredentialGrantNeedsAHuman: auto asks nothing, so a tool the
// model wrote runs unapproved; but one whose manifest grants a credential
// runs in auto only on bytes a human approved with `openmax --approve`.
// Otherwise the call is refused without an approval_request, the tool_end
// and a harness_note say why and how to approve, and the key reaches no
// process.
func TestAutoModeCredentialGrantNeedsAHuman(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary; skipped in -short mode")
	}
	bin := buildBinary(t)
	noGrant := `{"description": "prints its key", "code": "leak.sh", "interpreter": ["/bin/sh"]}`
	cases := []struct {
		name     string
		manifest string
		approve  []string // the files a human approved
		change   string   // what the model rewrote afterwards ("" for nothing)
		runs     bool     // the tool's program ran
		why      string   // the refusal's file, when refused
	}{
		{"written by the model, nobody approved", "", nil, "", false, ".openmax/tools/leak.json"},
		{"manifest approved, code not", "", []string{".openmax/tools/leak.json"}, "", false, "leak.sh"},
		{"code rewritten after approval", "", []string{".openmax/tools/leak.json", "leak.sh"}, "leak.sh", false, "leak.sh"},
		{"both approved by a human", "", []string{".openmax/tools/leak.json", "leak.sh"}, "", true, ""},
		{"no grant: auto asks nothing", noGrant, nil, "", true, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			project := grantProject(t, c.manifest)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			env := trustedBinaryEnv(t, ctx, bin, project, "", "OPENAI_API_KEY="+grantKey)
			if len(c.approve) > 0 {
				approveFiles(t, ctx, bin, project, env, c.approve...)
			}
			if c.change != "" {
				writeFile(t, filepath.Join(project, c.change), grantCode+"# more\n")
			}
			sc := filepath.Join(t.TempDir(), "s.yaml")
			writeFile(t, sc, "replies:\n  - tool_calls: [{id: c1, name: leak, args: {}}]\n  - text: ok\n")
			cmd := exec.CommandContext(ctx, bin, "--stdio", "--provider", "script", "--script", sc, "--project", project)
			cmd.Env = env
			cmd.Stdin = strings.NewReader(`{"cmd":"approval_mode","mode":"auto"}` + "\n" + `{"cmd":"user","text":"leak it"}` + "\n")
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				t.Fatalf("exit: %v\nstderr: %s", err, stderr.String())
			}
			var end, note struct{ CallID, Output, Text string }
			var ok *bool
			for _, line := range strings.Split(strings.TrimSpace(stdout.String()), "\n") {
				var ev struct {
					Type, Output, Text string
					CallID             string `json:"call_id"`
					OK                 *bool
				}
				if err := json.Unmarshal([]byte(line), &ev); err != nil {
					t.Fatalf("stdout line %q: %v", line, err)
				}
				switch ev.Type {
				case "approval_request":
					t.Errorf("auto emitted an approval request: %s", line)
				case "tool_end":
					end.CallID, end.Output, ok = ev.CallID, ev.Output, ev.OK
				case "harness_note":
					if ev.CallID != "" { // not the note of the mode change
						note.CallID, note.Text = ev.CallID, ev.Text
					}
				}
			}
			got, err := os.ReadFile(filepath.Join(project, "granted.txt"))
			ran := err == nil
			if ran != c.runs {
				t.Fatalf("the tool ran: %v, want %v (granted.txt %q)\nstdout:\n%s", ran, c.runs, got, stdout.String())
			}
			if c.runs {
				if c.manifest == "" && string(got) != grantKey {
					t.Errorf("approved by a human, the tool did not get its key (granted.txt %q)", got)
				}
				if ok == nil || !*ok || strings.Contains(stdout.String(), grantMarker) {
					t.Errorf("tool_end %q ok %v; want it run and the key redacted\n%s", end.Output, ok, stdout.String())
				}
				return
			}
			want := "not run: leak is granted OPENAI_API_KEY by its manifest, and in auto mode a tool granted credentials runs only on bytes a human approved: " + c.why
			if ok == nil || *ok || !strings.HasPrefix(end.Output, want) || !strings.Contains(end.Output, "`openmax --approve "+c.why+"`") {
				t.Errorf("tool_end ok %v output %q\nwant a refusal starting %q naming `openmax --approve %s`", ok, end.Output, want, c.why)
			}
			if note.CallID != "c1" || note.Text != end.Output {
				t.Errorf("harness_note %+v, want the refusal for c1", note)
			}
		})
	}
}
