package codex

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
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

// A server that writes its last lines and exits at once loses none of
// them: every event is delivered and every line recorded before Close
// returns (reading the output is never cut short by the process's exit).
func TestLastLinesOfAnExitingServerAreKept(t *testing.T) {
	const n = 5000
	script := `read -r line
printf '{"id":1,"result":{"userAgent":"x","codexHome":"/","platformFamily":"unix","platformOs":"linux"}}\n'
read -r line
seq ` + "5000" + ` | sed 's/.*/{"method":"item\/agentMessage\/delta","params":{"threadId":"t","turnId":"u","itemId":"i","delta":"&"}}/'
exit 0`
	for round := 0; round < 5; round++ {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		var transcript lockedBuffer
		cl, err := Start(ctx, Options{Command: []string{"sh", "-c", script, "sh"}, Transcript: &transcript})
		if err != nil {
			t.Fatal(err)
		}
		got := 0
		for range cl.Events() {
			got++
		}
		if err := cl.Close(ctx); err != nil {
			t.Fatal(err)
		}
		cancel()
		if got != n {
			t.Fatalf("round %d: %d of %d events", round, got, n)
		}
		if lines := strings.Count(transcript.String(), "\n"); lines != n+3 {
			t.Fatalf("round %d: %d transcript lines, want %d", round, lines, n+3)
		}
	}
}

type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
