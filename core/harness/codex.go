package harness

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/openmax/openmax/core/codexbackend"
	"github.com/openmax/openmax/internal/flock"
	"github.com/openmax/openmax/internal/safefile"
	"github.com/openmax/openmax/provider"
)

// useCodex makes codex app-server run the engine's turns (--provider
// codex): the project is its working directory, the frozen system prompt
// its developer instructions, the engine's tools its dynamic tools.
func (h *Harness) useCodex() error {
	cfg := codexbackend.Config{
		Command:      strings.Fields(h.cfg.Codex),
		Dir:          h.project,
		Model:        h.cfg.Model,
		Instructions: h.engine.System,
		Version:      Version,
		Log:          h.deps.Log,
		Start:        h.deps.CodexStart,
		Clock:        h.deps.Clock,
		// The reply-size cap applies to codex's replies as to any
		// provider's.
		MaxReplyBytes: h.cfg.MaxReplyBytes,
	}
	if h.cfg.CodexTranscript != "" {
		// A FIFO, device or directory is refused before it can block the
		// start or take what is not a file.
		if fi, err := os.Stat(h.cfg.CodexTranscript); err == nil && !fi.Mode().IsRegular() {
			return fmt.Errorf("--codex-transcript: %s is not a regular file", h.cfg.CodexTranscript)
		}
		// One writer at a time: a second openmax on the same file would
		// interleave two sessions' lines.
		lock, err := flock.Acquire(h.cfg.CodexTranscript, 0o600, 0)
		if errors.Is(err, flock.ErrHeld) {
			return fmt.Errorf("--codex-transcript: %s is being written by another openmax", h.cfg.CodexTranscript)
		}
		if err != nil {
			return fmt.Errorf("--codex-transcript: %w", err)
		}
		f, _, err := safefile.OpenFile(h.cfg.CodexTranscript, os.O_WRONLY|os.O_TRUNC, 0o600)
		if err != nil {
			_ = lock.Release()
			return fmt.Errorf("--codex-transcript: %w", err)
		}
		h.codexTranscript, h.codexTranscriptLock = f, lock
		cfg.Transcript = f
	}
	h.codex = codexbackend.New(cfg)
	h.engine.Backend = h.codex
	return nil
}

// toolSpecs are the engine's tools as a turn lists them (core.TurnHost.Tools).
func (h *Harness) toolSpecs() []provider.ToolSpec {
	if h.engine.Tools == nil {
		return nil
	}
	return h.engine.Tools.Specs()
}

// closeCodex ends the app-server, if one runs, and the transcript.
func (h *Harness) closeCodex() {
	if h.codex != nil {
		ctx, stop := context.WithTimeout(context.Background(), 5*time.Second)
		defer stop()
		if err := h.codex.Close(ctx); err != nil {
			fmt.Fprintf(h.deps.Log, "openmax: stopping codex app-server: %v\n", err)
		}
	}
	if h.codexTranscript != nil {
		if err := h.codexTranscript.Close(); err != nil {
			fmt.Fprintf(h.deps.Log, "openmax: --codex-transcript: %v\n", err)
		}
		_ = h.codexTranscriptLock.Release()
	}
}
