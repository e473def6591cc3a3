package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/openmax/openmax/internal/citest"
)

// TestCommandsCannotReadOurEnviron: a command run_command starts runs as
// the same user as openmax, so without hardening it could read the
// provider key from /proc/<openmax>/environ. openmax runs here as an
// unprivileged user (nobody) with a key in its environment; the command
// reads its parent's environ and must be refused.
func TestCommandsCannotReadOurEnviron(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary as another user; skipped in -short mode")
	}
	if os.Geteuid() != 0 {
		citest.SkipOutsideCI(t, "needs root to run openmax as an unprivileged user (CI runs as root)")
	}
	const key = "sk-proj-ENVIRONKEY0123456789"
	const nobody = 65534
	bin := buildBinary(t)
	// The shared binary's folder is private to root; nobody needs its own copy.
	root := t.TempDir()
	for _, d := range []string{root, filepath.Join(root, "project"), filepath.Join(root, "state"), filepath.Join(root, "config")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(d, nobody, nobody); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(filepath.Dir(root), 0o755); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	nbin := filepath.Join(root, "openmax")
	if err := os.WriteFile(nbin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	sc := filepath.Join(root, "s.yaml")
	script := "replies:\n" +
		"  - tool_calls: [{id: c1, name: run_command, args: {argv: [sh, -c, 'cat /proc/$PPID/environ; echo; id -u']}}]\n" +
		"  - text: done\n"
	if err := os.WriteFile(sc, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	project := filepath.Join(root, "project")
	env := []string{"PATH=/usr/bin:/bin", "XDG_STATE_HOME=" + filepath.Join(root, "state"), "XDG_CONFIG_HOME=" + filepath.Join(root, "config"), "OPENAI_API_KEY=" + key}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	asNobody := func(args ...string) *exec.Cmd {
		c := exec.CommandContext(ctx, nbin, args...)
		c.Env = env
		c.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
		return c
	}
	if out, err := asNobody("trust", project).CombinedOutput(); err != nil {
		t.Fatalf("trust: %v %s", err, out)
	}
	cmd := asNobody("--stdio", "--provider", "script", "--script", sc, "--project", project)
	cmd.Stdin = strings.NewReader(`{"cmd":"approval_mode","mode":"auto"}` + "\n" + `{"cmd":"user","text":"go"}` + "\n")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("exit: %v\nstderr: %s", err, stderr.String())
	}
	out := stdout.String()
	if !strings.Contains(out, `"type":"tool_end"`) || !strings.Contains(out, "65534") {
		t.Fatalf("the command did not run as nobody:\n%s", out)
	}
	if strings.Contains(out, "ENVIRONKEY") {
		t.Errorf("the command read the key from openmax's environ:\n%s", out)
	}
	if !strings.Contains(out, "Permission denied") {
		t.Errorf("reading the parent's environ was not refused:\n%s", out)
	}
}
