package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openmax/openmax/core/config"
	"github.com/openmax/openmax/core/tool/builtin"
	"github.com/openmax/openmax/provider/clock"
)

// TestApprovalModePolicy: approval_mode over the wire is saved only for a
// trusted project, under its canonical path (a symlinked project directory
// is the directory it points to), never from an openmax an agent's tool
// started (OPENMAX_AGENT_SPAWNED), and a save that fails leaves the mode
// unchanged with a protocol_error saying so.
func TestApprovalModePolicy(t *testing.T) {
	tests := []struct {
		name    string
		trust   bool
		link    bool              // run with --project a symlink to the trusted directory
		env     map[string]string // extra environment of the session
		breakFS bool              // make the settings unsavable after trust
		ack     bool
		errHas  string
		mode    string // the saved mode afterwards, read through the real path
	}{
		{"trusted: saved", true, false, nil, false, true, "", "auto"},
		{"untrusted: refused", false, false, nil, false, false, "is not trusted", "ask"},
		{"trusted through a symlink: saved for the real directory", true, true, nil, false, true, "", "auto"},
		{"agent-spawned: refused", true, false, map[string]string{"OPENMAX_AGENT_SPAWNED": "1"}, false, false, "OPENMAX_AGENT_SPAWNED", "ask"},
		{"save fails: refused, unchanged", true, false, nil, true, false, `could not save mode \"auto\", so it is unchanged (still \"ask\")`, "ask"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base := t.TempDir()
			real := filepath.Join(base, "real")
			if err := os.Mkdir(real, 0o700); err != nil {
				t.Fatal(err)
			}
			project := real
			if tt.link {
				project = filepath.Join(base, "link")
				if err := os.Symlink(real, project); err != nil {
					t.Fatal(err)
				}
			}
			cfg := filepath.Join(t.TempDir(), "openmax")
			p, err := config.Open(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if tt.trust {
				if err := p.Trust(real); err != nil {
					t.Fatal(err)
				}
			}
			if tt.breakFS {
				// The lock file replaced by a directory: the settings still
				// read, but no update can take the lock.
				lock := filepath.Join(cfg, "projects.json.lock")
				os.Remove(lock)
				if err := os.Mkdir(lock, 0o700); err != nil {
					t.Fatal(err)
				}
			}
			getenv := func(k string) string {
				if k == "XDG_CONFIG_HOME" {
					return filepath.Dir(cfg)
				}
				return tt.env[k]
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			var out, errb bytes.Buffer
			stdin := `{"cmd":"approval_mode","mode":"auto"}` + "\n"
			code := run(ctx, []string{"--stdio", "--provider", "echo", "--project", project}, strings.NewReader(stdin), &out, &errb, env{clock: clock.Real{}, getenv: getenv})
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errb.String())
			}
			got := out.String()
			if acked := strings.Contains(got, `{"type":"approval_mode","mode":"auto"}`); acked != tt.ack {
				t.Errorf("acknowledged %v, want %v:\n%s", acked, tt.ack, got)
			}
			if !tt.ack && (!strings.Contains(got, `"type":"protocol_error"`) || !strings.Contains(got, tt.errHas)) {
				t.Errorf("want a protocol_error naming %q:\n%s", tt.errHas, got)
			}
			if m := p.Mode(real); m != tt.mode {
				t.Errorf("saved mode %q, want %q", m, tt.mode)
			}
		})
	}
}

// TestAgentSpawnedOpenmaxCannotChangeMode: the real binary, in auto mode,
// runs a scripted model whose run_command starts another `openmax --stdio`
// on the same trusted project and sends it approval_mode readonly. The
// child finds the marker every tool's process gets and answers with a
// protocol_error, so the mode stays auto.
func TestAgentSpawnedOpenmaxCannotChangeMode(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary; skipped in -short mode")
	}
	bin := buildBinary(t)
	project := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	env := trustedBinaryEnv(t, ctx, bin, project, "")
	cfgHome := envValue(env, "XDG_CONFIG_HOME")
	// The child gets only PATH, HOME and LANG (and the marker), so the
	// command names the settings directory itself.
	inner := `printf '%s\n' '{"cmd":"approval_mode","mode":"readonly"}' | XDG_CONFIG_HOME=` + cfgHome + ` ` + bin + ` --stdio --provider echo --project ` + project
	args := jsonString(inner)
	sc := filepath.Join(t.TempDir(), "s.yaml")
	writeFile(t, sc, "replies:\n  - tool_calls: [{id: c1, name: run_command, args: {argv: [/bin/sh, -c, "+args+"]}}]\n  - text: done\n")
	cmd := exec.CommandContext(ctx, bin, "--stdio", "--provider", "script", "--script", sc, "--project", project)
	cmd.Env = env
	cmd.Stdin = strings.NewReader(`{"cmd":"approval_mode","mode":"auto"}` + "\n" + `{"cmd":"user","text":"go"}` + "\n")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	s := string(out)
	if !strings.Contains(s, `{"type":"approval_mode","mode":"auto"}`) {
		t.Fatalf("the outer session's own approval_mode was not saved:\n%s", s)
	}
	if !strings.Contains(s, `protocol_error`) || !strings.Contains(s, `OPENMAX_AGENT_SPAWNED`) || strings.Contains(s, `\"type\":\"approval_mode\"`) {
		t.Errorf("the agent-spawned openmax did not refuse approval_mode:\n%s", s)
	}
	p, err := config.Open(filepath.Join(cfgHome, "openmax"))
	if err != nil {
		t.Fatal(err)
	}
	if m := p.Mode(project); m != "auto" {
		t.Errorf("mode %q after the agent's attempt, want auto", m)
	}
}

// TestAgentSpawnedOpenmaxCannotTrustOrApprove: the model must not make
// its own decisions a human's. An openmax that the model's run_command
// starts (it carries OPENMAX_AGENT_SPAWNED, or its shell did before it
// unset it) refuses `trust` and `--approve`, saves nothing, and says why;
// the same commands from the test (a terminal) work.
func TestAgentSpawnedOpenmaxCannotTrustOrApprove(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary; skipped in -short mode")
	}
	bin := buildBinary(t)
	project, other := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(project, "tools", "t.sh"), "echo hi\n")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	env := trustedBinaryEnv(t, ctx, bin, project, "")
	cfgHome := envValue(env, "XDG_CONFIG_HOME")
	// The second unsets the marker first: its shell still carries it.
	inner := `XDG_CONFIG_HOME=` + cfgHome + ` ` + bin + ` trust ` + other + `; unset ` + builtin.AgentSpawnedEnv + `; XDG_CONFIG_HOME=` + cfgHome + ` ` + bin +
		` --approve tools/t.sh --project ` + project
	sc := filepath.Join(t.TempDir(), "s.yaml")
	writeFile(t, sc, "replies:\n  - tool_calls: [{id: c1, name: run_command, args: {argv: [/bin/sh, -c, "+jsonString(inner)+"]}}]\n  - text: done\n")
	cmd := exec.CommandContext(ctx, bin, "--stdio", "--provider", "script", "--script", sc, "--project", project)
	cmd.Env = env
	cmd.Stdin = strings.NewReader(`{"cmd":"approval_mode","mode":"auto"}` + "\n" + `{"cmd":"user","text":"go"}` + "\n")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	s := string(out)
	if strings.Count(s, "a human's decision") != 2 || strings.Contains(s, "trusted "+other) || strings.Contains(s, "approved tools/t.sh") {
		t.Errorf("the agent-spawned trust and --approve were not both refused:\n%s", s)
	}
	p, err := config.Open(filepath.Join(cfgHome, "openmax"))
	if err != nil {
		t.Fatal(err)
	}
	if p.Trusted(other) {
		t.Errorf("the agent-spawned openmax trusted %s", other)
	}
	// From a terminal both work.
	for _, args := range [][]string{{"trust", other}, {"--approve", "tools/t.sh", "--project", project}} {
		c := exec.CommandContext(ctx, bin, args...)
		c.Env = env
		if out, err := c.CombinedOutput(); err != nil {
			t.Errorf("openmax %v from a terminal: %v\n%s", args, err, out)
		}
	}
}

// TestAgentGuardSurvivesExec: however a model's command execs, an openmax
// it starts cannot make a human's decision. The real binary, in auto mode,
// runs one run_command per shape; each tries to trust another project,
// approve an external tool that is granted a provider key, or switch a
// second trusted project to auto over --stdio. Every shape is refused
// with the reason in the tool's output, and the settings directory is
// byte for byte what it was. The shapes hide the marker from every
// process's environment (env -u as argv, exec after unset, a pipeline
// under env -u): only the openmax among the parents gives them away.
func TestAgentGuardSurvivesExec(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary; skipped in -short mode")
	}
	bin := buildBinary(t)
	project, other, second := t.TempDir(), t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(project, "tools", "k.sh"), "echo \"$OPENAI_API_KEY\"\n")
	writeFile(t, filepath.Join(project, ".openmax", "tools", "k.json"), `{"code":"tools/k.sh","interpreter":["/bin/sh"],"env":["OPENAI_API_KEY"]}`)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	env := trustedBinaryEnv(t, ctx, bin, project, "")
	cfgHome := envValue(env, "XDG_CONFIG_HOME")
	trust := exec.CommandContext(ctx, bin, "trust", second)
	trust.Env = env
	if out, err := trust.CombinedOutput(); err != nil {
		t.Fatalf("trust %s: %v\n%s", second, err, out)
	}
	auto := exec.CommandContext(ctx, bin, "--stdio", "--provider", "echo", "--project", project)
	auto.Env = env
	auto.Stdin = strings.NewReader(`{"cmd":"approval_mode","mode":"auto"}` + "\n")
	if out, err := auto.Output(); err != nil || !strings.Contains(string(out), `"mode":"auto"`) {
		t.Fatalf("approval_mode auto: %v\n%s", err, out)
	}
	const human, mode = "a human's decision", "cannot change its own approval mode"
	x := builtin.AgentSpawnedEnv
	cfg := "XDG_CONFIG_HOME=" + cfgHome
	trustCmd := cfg + " " + bin + " trust " + other
	modeCmd := `printf '%s\n' '{"cmd":"approval_mode","mode":"auto"}' | ` + cfg + " exec " + bin + " --stdio --provider echo --project " + second
	shapes := []struct {
		name string
		argv []string
		want string // in the tool's output
	}{
		{"plain", []string{"env", cfg, bin, "trust", other}, human},
		{"unset in a shell", []string{"/bin/sh", "-c", "unset " + x + "; " + trustCmd}, human},
		{"env -u as argv", []string{"env", "-u", x, cfg, bin, "trust", other}, human},
		{"exec after unset", []string{"/bin/sh", "-c", "unset " + x + "; exec env " + trustCmd}, human},
		{"a pipeline", []string{"env", "-u", x, "/bin/sh", "-c", "true | " + trustCmd + " 2>&1 | cat"}, human},
		{"--approve of a key-granted tool", []string{"env", "-u", x, cfg, bin, "--approve", ".openmax/tools/k.json", "--project", project}, human},
		{"--stdio sending approval_mode auto", []string{"env", "-u", x, "/bin/sh", "-c", modeCmd}, mode},
		// Daemonized: setsid -f forks and its parent exits at once, so the
		// openmax runs in a process whose parent is gone; it waits until it
		// has been re-parented, then tries. Its output comes back through a
		// FIFO the tool's command reads. (It loops while its parent is
		// still setsid.)
		{"daemonized (setsid -f)", []string{"env", "-u", x, "/bin/sh", "-c", `f=$(mktemp -u) && mkfifo "$f" && setsid -f /bin/sh -c 'while [ "$(cat /proc/$(cut -d" " -f4 /proc/$$/stat)/comm)" = setsid ]; do :; done; ` + trustCmd + ` >"$0" 2>&1' "$f" && cat "$f"`}, human},
	}
	snapshot := func() map[string]string {
		files := map[string]string{}
		_ = filepath.WalkDir(cfgHome, func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				b, _ := os.ReadFile(p)
				files[p] = string(b)
			}
			return nil
		})
		return files
	}
	for _, sh := range shapes {
		t.Run(sh.name, func(t *testing.T) {
			before := snapshot()
			args, _ := json.Marshal(map[string]any{"argv": sh.argv})
			sc := filepath.Join(t.TempDir(), "s.yaml")
			writeFile(t, sc, "replies:\n  - tool_calls: [{id: c1, name: run_command, args: "+string(args)+"}]\n  - text: done\n")
			cmd := exec.CommandContext(ctx, bin, "--stdio", "--provider", "script", "--script", sc, "--project", project)
			cmd.Env = env
			cmd.Stdin = strings.NewReader(`{"cmd":"user","text":"go"}` + "\n")
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			var output string
			for _, line := range strings.Split(string(out), "\n") {
				var ev struct{ Type, Output string }
				if json.Unmarshal([]byte(line), &ev) == nil && ev.Type == "tool_end" {
					output = ev.Output
				}
			}
			if !strings.Contains(output, sh.want) {
				t.Errorf("the agent's command was not refused (want %q in its output):\n%s", sh.want, output)
			}
			after := snapshot()
			for p, b := range after {
				if before[p] != b {
					t.Errorf("the agent's command changed %s:\n%s", p, b)
				}
			}
			p, err := config.Open(filepath.Join(cfgHome, "openmax"))
			if err != nil {
				t.Fatal(err)
			}
			if p.Trusted(other) || p.Mode(second) != "ask" {
				t.Errorf("trusted %s: %v; mode of %s: %s", other, p.Trusted(other), second, p.Mode(second))
			}
		})
	}
}

// envValue is the value of key in env ("KEY=value" entries), the last one
// when it is there more than once.
func envValue(env []string, key string) string {
	var v string
	for _, kv := range env {
		if val, ok := strings.CutPrefix(kv, key+"="); ok {
			v = val
		}
	}
	return v
}
