//go:build linux

package hook

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openmax/openmax/core"
)

// writeHooks writes a hook file (nothing when content is "").
func writeHooks(t *testing.T, path, content string) {
	t.Helper()
	if content == "" {
		return
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

const userHooks = `{"hooks": [
  {"name": "verify", "event": "turn_end", "command": "/usr/bin/verify", "args": ["--strict"], "lifecycle": "persistent", "timeout": "5s"},
  {"name": "audit", "event": "tool_start", "command": "audit", "env": {"AUDIT_LEVEL": "full"}}
]}`

func TestLoad(t *testing.T) {
	rows := []struct {
		name        string
		user, proj  string
		wantHooks   string // name:event:mode:lifecycle, comma-separated, in order
		wantFailure string // "user" or "project": which file fails ("" none)
		failEvent   core.HookEvent
		failDetail  string
	}{
		{name: "no files"},
		{name: "both load, user first", user: userHooks,
			proj:      `{"hooks":[{"name":"gate","event":"user_prompt_submit","command":"./hooks/gate","args":["$HOME"]}]}`,
			wantHooks: "verify:turn_end:intercept:persistent,audit:tool_start:observe:process-per-event,gate:user_prompt_submit:intercept:process-per-event"},
		{name: "observe an intercept event", proj: `{"hooks":[{"name":"seen","event":"turn_end","mode":"observe","command":"x"}]}`,
			wantHooks: "seen:turn_end:observe:process-per-event"},
		{name: "invalid JSON", user: userHooks, proj: `{"hooks": [`,
			wantHooks:   "verify:turn_end:intercept:persistent,audit:tool_start:observe:process-per-event",
			wantFailure: "project", failDetail: "the hook file is not valid (no hook of it is loaded)"},
		{name: "not an object", proj: `[]`, wantFailure: "project", failDetail: "not valid"},
		{name: "unknown key", user: `{"hooks":[{"name":"a","event":"turn_end","command":"x","shell":true}]}`,
			wantFailure: "user", failDetail: `hooks[0] is not valid (no hook of the file is loaded): json: unknown field "shell"`},
		{name: "unknown event", proj: `{"hooks":[{"name":"a","event":"on_save","command":"x"}]}`,
			wantFailure: "project", failDetail: `unknown event "on_save"`},
		{name: "intercept of an observe-only event", proj: `{"hooks":[{"name":"ok","event":"turn_end","command":"x"},{"name":"a","event":"tool_end","mode":"intercept","command":"x"}]}`,
			wantFailure: "project", failEvent: core.HookToolEnd, failDetail: `hooks[1] is not valid (no hook of the file is loaded): hook "a": event tool_end can only be observed`},
		{name: "bad lifecycle", proj: `{"hooks":[{"name":"a","event":"turn_end","command":"x","lifecycle":"daemon"}]}`,
			wantFailure: "project", failEvent: core.HookTurnEnd, failDetail: `lifecycle "daemon"`},
		{name: "no command", proj: `{"hooks":[{"name":"a","event":"turn_end"}]}`,
			wantFailure: "project", failEvent: core.HookTurnEnd, failDetail: "command is missing"},
		{name: "command as a string of shell", proj: `{"hooks":[{"name":"a","event":"turn_end","command":"x","args":"--flag"}]}`,
			wantFailure: "project", failDetail: "cannot unmarshal string"},
		{name: "bad timeout", proj: `{"hooks":[{"name":"a","event":"turn_end","command":"x","timeout":"1h"}]}`,
			wantFailure: "project", failEvent: core.HookTurnEnd, failDetail: `timeout "1h"`},
		{name: "bad env name, value kept out", proj: `{"hooks":[{"name":"a","event":"turn_end","command":"x","env":{"BAD-NAME":"topsecretvalue"}}]}`,
			wantFailure: "project", failEvent: core.HookTurnEnd, failDetail: `env name "BAD-NAME" is not a valid variable name`},
		{name: "the agent marker is openmax's", proj: `{"hooks":[{"name":"a","event":"turn_end","command":"x","env":{"OPENMAX_AGENT_SPAWNED":""}}]}`,
			wantFailure: "project", failEvent: core.HookTurnEnd, failDetail: `env OPENMAX_AGENT_SPAWNED is openmax's to set`},
		{name: "env value not a string", proj: `{"hooks":[{"name":"a","event":"turn_end","command":"x","env":{"N":1}}]}`,
			wantFailure: "project", failDetail: "cannot unmarshal number"},
		{name: "same name twice", proj: `{"hooks":[{"name":"a","event":"turn_end","command":"x"},{"name":"a","event":"turn_done","command":"y"}]}`,
			wantFailure: "project", failEvent: core.HookTurnDone, failDetail: `name "a" is used twice`},
		{name: "project cannot replace a user hook", user: userHooks,
			proj:        `{"hooks":[{"name":"verify","event":"turn_end","command":"/bin/true"}]}`,
			wantHooks:   "verify:turn_end:intercept:persistent,audit:tool_start:observe:process-per-event",
			wantFailure: "project", failEvent: core.HookTurnEnd, failDetail: `hook "verify" is already defined by the user's hook file`},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			project, user := t.TempDir(), t.TempDir()
			userFile, projFile := filepath.Join(user, UserFile), filepath.Join(project, ".openmax", "hooks.json")
			writeHooks(t, userFile, r.user)
			writeHooks(t, projFile, r.proj)
			s, fs := Load(project, user, Options{})
			defer s.Close()
			var got []string
			for _, h := range s.Hooks() {
				got = append(got, strings.Join([]string{h.Name, string(h.Event), h.Mode, h.Lifecycle}, ":"))
			}
			if g := strings.Join(got, ","); g != r.wantHooks {
				t.Errorf("hooks %s, want %s", g, r.wantHooks)
			}
			if r.wantFailure == "" {
				if len(fs) != 0 {
					t.Errorf("failures %+v", fs)
				}
				return
			}
			file := map[string]string{"user": userFile, "project": projFile}[r.wantFailure]
			if len(fs) != 1 || fs[0].Hook != file || fs[0].Event != r.failEvent || !strings.Contains(fs[0].Detail, r.failDetail) {
				t.Fatalf("failures %+v, want one for %s (event %q) with %q", fs, file, r.failEvent, r.failDetail)
			}
			if strings.Contains(fs[0].Detail, "topsecretvalue") {
				t.Errorf("an env value is in the failure: %s", fs[0].Detail)
			}
		})
	}
}

func TestLoadResolves(t *testing.T) {
	project, user := t.TempDir(), t.TempDir()
	writeHooks(t, filepath.Join(user, UserFile), userHooks)
	writeHooks(t, filepath.Join(project, ProjectFile), `{"hooks":[{"name":"gate","event":"user_prompt_submit","command":"./hooks/gate","args":["$HOME","`+"`id`"+`"]}]}`)
	s, fs := Load(project, user, Options{})
	defer s.Close()
	if len(fs) != 0 || s.Len() != 3 {
		t.Fatalf("%d hooks, failures %+v", s.Len(), fs)
	}
	v, a, g := s.Hooks()[0], s.Hooks()[1], s.Hooks()[2]
	if v.Timeout != 5*time.Second || v.Dir != user || v.File != filepath.Join(user, UserFile) || strings.Join(v.Args, " ") != "--strict" {
		t.Errorf("verify: %+v", v)
	}
	if a.Timeout != DefaultTimeout || a.Command != "audit" || a.Env["AUDIT_LEVEL"] != "full" {
		t.Errorf("audit: %+v", a)
	}
	if g.Command != filepath.Join(project, "hooks", "gate") || g.Dir != project || g.Args[0] != "$HOME" || g.Args[1] != "`id`" {
		t.Errorf("gate: %+v", g)
	}
}

// A hook file that cannot be read is a failure; the other file's hooks
// still run.
func TestUnloadableFileOthersRun(t *testing.T) {
	project, user := t.TempDir(), t.TempDir()
	// The project's hook file is a directory: it cannot be read.
	if err := os.MkdirAll(filepath.Join(project, ProjectFile), 0o700); err != nil {
		t.Fatal(err)
	}
	writeHooks(t, filepath.Join(user, UserFile),
		`{"hooks":[{"name":"gate","event":"user_prompt_submit","command":"`+prog+`","args":["answer","refuse","not today"]}]}`)
	s, fs := Load(project, user, Options{})
	defer s.Close()
	if len(fs) != 1 || fs[0].Hook != filepath.Join(project, ProjectFile) || !strings.Contains(fs[0].Detail, "cannot read the hook file") {
		t.Fatalf("failures %+v", fs)
	}
	v, ifs := s.Intercept(context.Background(), core.HookUserPromptSubmit, prompt)
	if !v.Refused || v.Reason != "not today" || v.Hook != "gate" || len(ifs) != 0 {
		t.Errorf("verdict %+v failures %+v", v, ifs)
	}
}
