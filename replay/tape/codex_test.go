package tape

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openmax/openmax/core/harness"
	"github.com/openmax/openmax/recorder"
	"github.com/openmax/openmax/recorder/cassette"
)

// A --provider codex session is refused as a cassette both ways, with the
// way to record it instead: its model traffic is codex's, and a replay
// would start codex.
func TestCodexSessionsAreNotCassettes(t *testing.T) {
	cfg := harness.Defaults()
	cfg.Provider = "codex"
	path := filepath.Join(t.TempDir(), "c.yaml")
	_, err := Record(context.Background(), strings.NewReader(""), &bytes.Buffer{}, RecordOptions{Config: cfg, Cassette: recorder.Options{Path: path}})
	var ce *harness.ConfigError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "--codex-transcript") {
		t.Fatalf("Record: %v", err)
	}
	if _, statErr := os.Stat(path); !errors.Is(statErr, os.ErrNotExist) {
		t.Fatalf("the refused recording touched the cassette path: %v", statErr)
	}
	f := cassette.New()
	f.Session = &cassette.Session{SessionID: "s1", Config: &cfg}
	if _, err := Replay(context.Background(), f, ReplayOptions{}); !errors.Is(err, errCodexSession) {
		t.Fatalf("Replay: %v", err)
	}
}
