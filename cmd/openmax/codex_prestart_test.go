package main

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// fifoLines opens the named pipe path for reading (which waits for a
// writer) and delivers its lines; the channel is closed at end of file,
// once every process holding its write end has closed it or exited. When
// ctx ends first, the wait to open is given up.
func fifoLines(t *testing.T, ctx context.Context, path string) <-chan string {
	t.Helper()
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 4096)
	opened := make(chan struct{})
	go func() {
		defer close(lines)
		f, err := os.Open(path) // waits for the writer
		close(opened)
		if err != nil {
			return
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	context.AfterFunc(ctx, func() {
		select {
		case <-opened:
		default:
			// Nobody opened it: a writer of our own unblocks the open.
			if w, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
				w.Close()
			}
		}
	})
	return lines
}

// awaitLine returns the first line of lines that contains want, or fails
// the test when the pipe ends or ctx does first.
func awaitLine(t *testing.T, ctx context.Context, lines <-chan string, want string) {
	t.Helper()
	var seen []string
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("the pipe ended with no line containing %q; it held:\n%s", want, strings.Join(seen, "\n"))
			}
			if strings.Contains(l, want) {
				return
			}
			seen = append(seen, l)
		case <-ctx.Done():
			t.Fatalf("no line containing %q before the hang guard; the pipe held:\n%s", want, strings.Join(seen, "\n"))
		}
	}
}

// awaitEnd waits until lines ends: every holder of the pipe's write end
// (the stand-in app-server and whatever it exec'd) is gone.
func awaitEnd(t *testing.T, ctx context.Context, lines <-chan string, what string) {
	t.Helper()
	for {
		select {
		case _, ok := <-lines:
			if !ok {
				return
			}
		case <-ctx.Done():
			t.Fatalf("%s: the app-server process is still running (leaked)", what)
		}
	}
}

// TestCodexBackendStartsWithHello: the app-server starts while hello goes
// out, before the client has sent anything. The fake app-server's own
// trace (its --log, a named pipe the test reads) shows initialize answered
// and initialized sent before the test writes the first user command;
// the recorded session then plays exactly as its golden transcript says,
// and the fake exits when openmax does.
func TestCodexBackendStartsWithHello(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary; skipped in -short mode")
	}
	t.Parallel()
	bin := buildBinary(t)
	path := filepath.Join(codexCasesDir, "text.txtar")
	c := loadCodexCase(t, path)
	dir := t.TempDir()
	recorded := filepath.Join(dir, "app-server.jsonl")
	if err := os.WriteFile(recorded, c.appServer, 0o644); err != nil {
		t.Fatal(err)
	}
	trace := filepath.Join(dir, "trace")
	var lines <-chan string
	ready := func(ctx context.Context, _ *exec.Cmd) {
		lines = fifoLines(t, ctx, trace)
		// No command has been written yet: only openmax's own start can
		// get the fake this far.
		awaitLine(t, ctx, lines, "(send notification initialized)")
	}
	codexCmd := bin + " fake-app-server --transcript " + recorded + " --log " + trace + " --overwrite"
	transcript, _, stderr := runCodexSteps(t, bin, c, t.TempDir(), t.TempDir(), codexCmd, nil, ready)
	if !bytes.Equal(transcript, c.transcript) {
		t.Fatalf("the session differs from %s:\n%s\nwant:\n%s\nstderr:\n%s", path, transcript, c.transcript, stderr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), codexHangGuard)
	defer cancel()
	awaitEnd(t, ctx, lines, "after openmax exited")
}

// codexHangGuard bounds a wait that only a hang makes long.
const codexHangGuard = 3 * time.Minute

// standInAppServer is an app-server that never answers: it opens the
// named pipe $1 for writing (held by whatever it execs, so the pipe ends
// only when that is gone), says it started, then runs $2: `sleep` ignores
// its stdin (only a kill ends it), `cat` reads it to its end (closing
// stdin ends it, as it ends codex).
const standInAppServer = `exec 3>"$1"
echo started >&3
case "$2" in
sleep) exec sleep 3600 ;;
cat) exec cat >/dev/null ;;
exit) echo "codex: config.toml: no such model provider" >&2; exit 3 ;;
esac
`

// TestCodexBackendStartFails: an app-server that cannot start, exits at
// once, or never answers initialize. The failure is the first turn's error
// (then done error), the next turn tries again; a cancel during the start
// ends the turn cancelled; closing stdin or killing openmax during the
// start leaves no app-server process behind.
func TestCodexBackendStartFails(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary; skipped in -short mode")
	}
	t.Parallel()
	bin := buildBinary(t)
	script := filepath.Join(t.TempDir(), "stand-in.sh")
	if err := os.WriteFile(script, []byte(standInAppServer), 0o755); err != nil {
		t.Fatal(err)
	}
	hello := `{"type":"hello","proto":"openmax-stdio/6","protocol_version":6,"session_id":"s1","version":"0.1.0","project":"$PROJECT","continued":false}` + "\n"
	budget := `{"session_id":"s1","type":"budget","used_tokens":1278,"context_tokens":128000}` + "\n"
	budget2 := `{"session_id":"s1","type":"budget","used_tokens":1279,"context_tokens":128000}` + "\n"
	for _, tc := range []struct {
		name string
		mode string // the stand-in's $2; "" runs no stand-in: a program that does not exist
		// steps after the stand-in said it started (or at once)
		steps string
		kill  bool   // SIGKILL openmax instead of the steps
		want  string // stdout, the exit code last; "" when killed
	}{
		{name: "no such program", steps: "> {\"cmd\":\"user\",\"text\":\"Hi\"}\n< done\n> {\"cmd\":\"user\",\"text\":\"Again\"}\n< done\n",
			want: hello + budget +
				`{"session_id":"s1","type":"error","message":"codex: start codex app-server: codex: start $PROJECT/no-such-codex: fork/exec $PROJECT/no-such-codex: no such file or directory"}` + "\n" +
				`{"session_id":"s1","type":"done","stop_reason":"error"}` + "\n" + budget2 +
				`{"session_id":"s1","type":"error","message":"codex: start codex app-server: codex: start $PROJECT/no-such-codex: fork/exec $PROJECT/no-such-codex: no such file or directory"}` + "\n" +
				`{"session_id":"s1","type":"done","stop_reason":"error"}` + "\n" + "exit: 1\n"},
		{name: "exits at once", mode: "exit", steps: "> {\"cmd\":\"user\",\"text\":\"Hi\"}\n< done\n",
			want: hello + budget +
				`{"session_id":"s1","type":"error","message":"codex: start codex app-server: codex: initialize: codex: app-server connection closed; the app-server's stderr ended with:\ncodex: config.toml: no such model provider"}` + "\n" +
				`{"session_id":"s1","type":"done","stop_reason":"error"}` + "\n" + "exit: 1\n"},
		{name: "stdin closed during the start", mode: "sleep", want: hello + "exit: 0\n"},
		{name: "cancel during the start", mode: "sleep", steps: "> {\"cmd\":\"user\",\"text\":\"Hi\"}\n< budget\n> {\"cmd\":\"cancel\"}\n< done\n",
			want: hello + budget + `{"session_id":"s1","type":"done","stop_reason":"cancelled"}` + "\n" + "exit: 0\n"},
		{name: "openmax killed during the start", mode: "cat", kill: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			project, err := filepath.EvalSymlinks(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			codexCmd := filepath.Join(project, "no-such-codex")
			pipe := filepath.Join(t.TempDir(), "started")
			if tc.mode != "" {
				codexCmd = "sh " + script + " " + pipe + " " + tc.mode
			}
			var lines <-chan string
			ready := func(ctx context.Context, cmd *exec.Cmd) {
				if tc.mode == "" {
					return
				}
				lines = fifoLines(t, ctx, pipe)
				awaitLine(t, ctx, lines, "started") // before any command
				if tc.kill {
					if err := cmd.Process.Kill(); err != nil {
						t.Fatal(err)
					}
				}
			}
			c := codexCase{path: tc.name, steps: []byte(tc.steps)}
			transcript, _, stderr := runCodexSteps(t, bin, c, project, t.TempDir(), codexCmd, nil, ready)
			if tc.kill {
				if !strings.HasSuffix(string(transcript), "exit: -1\n") {
					t.Fatalf("openmax was not killed:\n%s", transcript)
				}
			} else if string(transcript) != tc.want {
				t.Fatalf("got:\n%s\nwant:\n%s\nstderr:\n%s", transcript, tc.want, stderr)
			}
			if lines != nil {
				ctx, cancel := context.WithTimeout(context.Background(), codexHangGuard)
				defer cancel()
				awaitEnd(t, ctx, lines, "after openmax exited")
			}
		})
	}
}
