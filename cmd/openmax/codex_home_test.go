package main

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/openmax/openmax/provider/codex"
)

// TestCodexHomeConfigApplies: the app-server reads config.toml from the
// CODEX_HOME the client passes in Options.Env, so what is configured there
// applies to the client's session: here the notify program, which codex
// runs when a turn completes (it writes codex's JSON to a FIFO the test
// reads, so nothing waits on a clock). The model provider every live test
// uses comes from the same file.
func TestCodexHomeConfigApplies(t *testing.T) {
	t.Parallel() // waits on child processes
	codexBin := codexBinary(t)
	bin := buildBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir := t.TempDir()
	model := filepath.Join(dir, "model.yaml")
	if err := os.WriteFile(model, []byte("replies:\n  - text: \"Notified.\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fp := startServer(t, ctx, bin, "fake-provider", "--scenario", model)
	env := liveCodexEnv(t, dir, fp.URL)
	fifo := filepath.Join(dir, "notify.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(dir, "codex-home", "config.toml")
	base, err := os.ReadFile(conf)
	if err != nil {
		t.Fatal(err)
	}
	notify := `notify = ["sh", "-c", "printf '%s' \"$1\" > ` + fifo + `", "sh"]` + "\n"
	// An MCP server that cannot start: codex reports its startup.
	mcp := "\n[mcp_servers.broken]\ncommand = \"false\"\n"
	if err := os.WriteFile(conf, append(append([]byte(notify), base...), mcp...), 0o644); err != nil {
		t.Fatal(err)
	}
	got := make(chan []byte, 1)
	t.Cleanup(func() { // releases the reader if notify never came
		if f, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
	})
	go func() {
		f, err := os.Open(fifo) // blocks until notify opens it for writing
		if err != nil {
			got <- nil
			return
		}
		defer f.Close()
		b, _ := io.ReadAll(f)
		got <- b
	}()
	work := t.TempDir()
	cl, err := codex.Start(ctx, codex.Options{Command: []string{codexBin}, Dir: work, Env: env, ClientName: "openmax-notify-test"})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close(ctx)
	mcpStates := make(chan []codex.McpServerStartupState, 1)
	go func() {
		var states []codex.McpServerStartupState
		for ev := range cl.Events() {
			if ev.Method != codex.MethodMcpServerStartupStatusUpdated {
				continue
			}
			v, err := ev.Decode()
			if p, ok := v.(*codex.McpServerStatusUpdatedNotification); err == nil && ok && p.Name == "broken" {
				states = append(states, p.Status)
			}
		}
		mcpStates <- states
	}()
	th, err := cl.StartThread(ctx, codex.ThreadOptions{Cwd: work})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := th.Send(ctx, "Hello"); err != nil {
		t.Fatal(err)
	}
	select {
	case b := <-got:
		var n struct {
			Type     string `json:"type"`
			ThreadID string `json:"thread-id"`
			Client   string `json:"client"`
			Last     string `json:"last-assistant-message"`
		}
		if err := json.Unmarshal(b, &n); err != nil || n.Type != "agent-turn-complete" || n.ThreadID != th.ID || n.Client != "openmax-notify-test" || n.Last != "Notified." {
			t.Fatalf("the notify program of CODEX_HOME/config.toml got %q (%v)", b, err)
		}
	case <-ctx.Done():
		t.Fatal("codex never ran the notify program configured in CODEX_HOME/config.toml")
	}
	if err := cl.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if states := <-mcpStates; len(states) == 0 || states[len(states)-1] != codex.McpServerStartupStateFailed {
		t.Fatalf("mcpServer/startupStatus/updated for the configured server: %v, want it ending failed", states)
	}
}
