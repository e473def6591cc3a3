package codex

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A stand-in app-server (a shell script) reports how it was launched: its
// arguments, working directory and environment come back as the
// initialize answer's userAgent. It then reads until stdin closes, so
// Close returning shows that closing stdin ends the process.
const launchScript = `read -r line
id=$(printf '%s' "$line" | sed 's/.*"id":\([0-9]*\).*/\1/')
printf '{"id":%s,"result":{"userAgent":"%s|%s|%s|%s|%s|%s|%s","codexHome":"%s","platformFamily":"unix","platformOs":"linux"}}\n' \
  "$id" "$*" "$(pwd -P)" "$GIT_AUTHOR_NAME" "$GIT_AUTHOR_EMAIL" "$GIT_COMMITTER_NAME" "$GIT_COMMITTER_EMAIL" "$EXTRA" "$CODEX_HOME"
read -r initialized
printf '%s\n' "$initialized" > "$SEEN"
cat > /dev/null
`

func TestStartLaunchesTheServerAsSpecified(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	seen := filepath.Join(t.TempDir(), "initialized")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cl, err := Start(ctx, Options{
		Command:  []string{"sh", "-c", launchScript, "sh"},
		Dir:      dir,
		Env:      []string{"CODEX_HOME=/tmp/codex-home", "EXTRA=yes", "SEEN=" + seen},
		Identity: Identity{Name: "Ada Bot", Email: "ada@example.com"},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := "app-server -c check_for_update_on_startup=false|" + dir + "|Ada Bot|ada@example.com|Ada Bot|ada@example.com|yes"
	if cl.Init.UserAgent != want || cl.Init.CodexHome != "/tmp/codex-home" {
		t.Fatalf("launched as %q (codexHome %q), want %q", cl.Init.UserAgent, cl.Init.CodexHome, want)
	}
	if err := cl.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if ctx.Err() != nil {
		t.Fatal("Close waited for the context: closing stdin did not end the server")
	}
	line, err := os.ReadFile(seen)
	if err != nil || strings.TrimSpace(string(line)) != `{"method":"initialized"}` {
		t.Fatalf("after initialize the server read %q (%v), want the initialized notification", line, err)
	}
}

// A server that exits during initialize fails Start with its stderr.
func TestStartReportsAServerThatDies(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err := Start(ctx, Options{Command: []string{"sh", "-c", `echo "no config.toml here" >&2; exit 3`, "sh"}})
	if !errors.Is(err, ErrClosed) || !strings.Contains(err.Error(), "no config.toml here") {
		t.Fatalf("Start: %v", err)
	}
	if _, err := Start(ctx, Options{Command: []string{filepath.Join(t.TempDir(), "no-such-codex")}}); err == nil || !strings.Contains(err.Error(), "no-such-codex") {
		t.Fatalf("Start of a missing program: %v", err)
	}
}
