package harness_test

import (
	"errors"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"github.com/openmax/openmax/core/harness"
)

// TestCodexFlags: --provider codex takes its own flags and none of the
// HTTP providers'; its flags are refused with any other provider.
func TestCodexFlags(t *testing.T) {
	w := newWorld(t, false)
	for _, tt := range []struct {
		name string
		set  func(*harness.Config)
		want string // "" means accepted
	}{
		{"plain", func(c *harness.Config) { c.Provider = "codex" }, ""},
		{"command and transcript", func(c *harness.Config) {
			c.Provider, c.Codex, c.CodexTranscript = "codex", "openmax fake-app-server --transcript t.jsonl", t.TempDir()+"/codex.jsonl"
		}, ""},
		{"base url", func(c *harness.Config) { c.Provider, c.BaseURL = "codex", "http://127.0.0.1:1" }, "takes no --base-url"},
		{"script", func(c *harness.Config) { c.Provider, c.Script = "codex", "s.yaml" }, "takes no --base-url or --script"},
		{"compact", func(c *harness.Config) { c.Provider, c.Compact = "codex", true }, "codex compacts its own thread"},
		{"codex flag elsewhere", func(c *harness.Config) { c.Provider, c.Codex = "echo", "codex" }, "only for --provider codex"},
		{"transcript elsewhere", func(c *harness.Config) { c.Provider, c.CodexTranscript = "echo", "t.jsonl" }, "only for --provider codex"},
		{"unwritable transcript", func(c *harness.Config) { c.Provider, c.CodexTranscript = "codex", t.TempDir()+"/missing/dir/t.jsonl" }, "--codex-transcript"},
		{"transcript is a directory", func(c *harness.Config) { c.Provider, c.CodexTranscript = "codex", t.TempDir() }, "is not a regular file"},
		{"transcript is a FIFO", func(c *harness.Config) { c.Provider, c.CodexTranscript = "codex", fifo(t) }, "is not a regular file"},
		{"transcript being written", func(c *harness.Config) { c.Provider, c.CodexTranscript = "codex", heldTranscript(t) }, "is being written by another openmax"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := harness.Defaults()
			cfg.Project = w.project
			tt.set(&cfg)
			_, err := harness.New(cfg, harness.Deps{Getenv: w.getenv})
			if tt.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var ce *harness.ConfigError
			if !errors.As(err, &ce) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v; want a *ConfigError containing %q", err, tt.want)
			}
		})
	}
}

// fifo makes a named pipe nobody reads: opening it for writing would block.
func fifo(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// heldTranscript is a transcript path another openmax (a harness of this
// test) is writing.
func heldTranscript(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "t.jsonl")
	cfg := harness.Defaults()
	cfg.Provider, cfg.CodexTranscript, cfg.Project = "codex", p, t.TempDir()
	h, err := harness.New(cfg, harness.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	// The harness holds the lock until it is collected (the lock's file
	// closes then): keep it reachable for the rest of the test, or a
	// collection in between frees the transcript the test calls held.
	t.Cleanup(func() { runtime.KeepAlive(h) })
	return p
}
