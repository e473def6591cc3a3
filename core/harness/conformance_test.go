package harness_test

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openmax/openmax/core/harness"
)

// TestPromptSurfacesApproveForUnapprovedSource: -p is a client that cannot
// prompt a human, so an external tool whose source no human approved is
// declined (never run, never approved) and the log names the
// `openmax --approve <source_path>` that approves it, "rather than decline
// silently" (stdio-protocol.md; US-6 and US-7 in docs/conformance.md).
func TestPromptSurfacesApproveForUnapprovedSource(t *testing.T) {
	w := extWorld(t, "auto", nil)
	sc := filepath.Join(t.TempDir(), "scenario.yaml")
	if err := os.WriteFile(sc, []byte(turns(1)), 0o644); err != nil {
		t.Fatal(err)
	}
	for run := 1; run <= 2; run++ {
		cfg := harness.Defaults()
		cfg.Provider, cfg.Script, cfg.Project = "script", sc, w.project
		var log bytes.Buffer
		h, err := harness.New(cfg, harness.Deps{Getenv: w.getenv, Log: &log})
		if err != nil {
			t.Fatal(err)
		}
		stop, err := h.Prompt(context.Background(), "show", io.Discard)
		if err != nil || stop != "stop" {
			t.Fatalf("run %d: Prompt: %q, %v\n%s", run, stop, err, log.String())
		}
		got := log.String()
		// Each run asks again: the decline approved nothing.
		for _, want := range []string{
			"openmax: declined, nobody can approve here: show is an external tool whose " + showManifestPath,
			"`openmax --approve " + showManifestPath + "` approves it from a terminal",
			"tool call c1 failed: not run: the call was declined",
		} {
			if !strings.Contains(got, want) {
				t.Errorf("run %d: the log does not say %q:\n%s", run, want, got)
			}
		}
	}
}
