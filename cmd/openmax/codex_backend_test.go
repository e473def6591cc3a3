package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/tools/txtar"

	"github.com/openmax/openmax/internal/golden"
	"github.com/openmax/openmax/replay/codexscenario"
)

// A codex case is one txtar archive, golden/codex/NAME.txtar: a session of
// `openmax --stdio --provider codex`, where each turn runs inside codex
// app-server. Its comment says what the case shows; its sections are:
//
//	fake.yaml         the model's replies: the fake provider's scenario, which
//	                  the real codex talks to when the case is recorded
//	steps             the client's side of the conversation (as in
//	                  golden/sessions: > line, < TYPE, eof)
//	project/...       optional: the files of the project the session runs in
//	                  ({{HOOKPROG}} and {{STATE}} as in golden/sessions: a
//	                  hook program openmax itself runs, in replay as live)
//	app-server.jsonl  every line openmax and codex app-server exchanged, as
//	                  recorded from the real codex ({"dir","msg"} lines)
//	transcript        openmax's stdout, then the exit code
//
// TestCodexBackend replays every case with `openmax fake-app-server` in
// codex's place, on every run and with no codex installed: the transcript
// must match and pass the stream checker. TestCodexBackendLive runs the same
// steps against the real codex (installed from npm) talking to the fake
// provider; OPENMAX_RECORD_CODEX=1 rewrites app-server.jsonl and the
// transcript from it, otherwise the live transcript must equal the golden
// one (a codex upgrade that changes what openmax reports fails here, and
// says to re-record).
const codexCasesDir = "../../golden/codex"

type codexCase struct {
	path       string
	scenario   []byte
	steps      []byte
	project    map[string][]byte
	appServer  []byte
	transcript []byte
}

func loadCodexCase(t *testing.T, path string) codexCase {
	t.Helper()
	a, err := txtar.ParseFile(path)
	if err != nil {
		t.Fatal(err)
	}
	c := codexCase{path: path}
	for _, f := range a.Files {
		switch name := f.Name; {
		case name == "fake.yaml":
			c.scenario = f.Data
		case name == "steps":
			c.steps = f.Data
		case name == "app-server.jsonl":
			c.appServer = f.Data
		case name == "transcript":
			c.transcript = f.Data
		case strings.HasPrefix(name, "project/") && fs.ValidPath(name):
			if c.project == nil {
				c.project = map[string][]byte{}
			}
			c.project[strings.TrimPrefix(name, "project/")] = f.Data
		default:
			t.Fatalf("%s: unknown section %q", path, name)
		}
	}
	if c.steps == nil || c.scenario == nil {
		t.Fatalf("%s: a codex case needs fake.yaml and steps", path)
	}
	return c
}

func codexCases(t *testing.T) []string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(codexCasesDir, "*.txtar"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no codex cases in %s: %v", codexCasesDir, err)
	}
	return paths
}

// runCodexCase runs the binary as `openmax --stdio --provider codex
// --codex CODEX` through the case's steps, in a fresh project holding the
// case's files, and returns stdout (project path as $PROJECT) with the exit
// code, and what it wrote to stdin.
func runCodexCase(t *testing.T, bin string, c codexCase, codexCmd string, extraEnv []string, args ...string) (transcript, stdin []byte, stderr string) {
	t.Helper()
	return runCodexIn(t, bin, c, t.TempDir(), t.TempDir(), codexCmd, extraEnv, args...)
}

// runCodexIn is runCodexCase in the project and state directories given,
// so a second run can continue the first one's session.
func runCodexIn(t *testing.T, bin string, c codexCase, project, state, codexCmd string, extraEnv []string, args ...string) (transcript, stdin []byte, stderr string) {
	t.Helper()
	return runCodexSteps(t, bin, c, project, state, codexCmd, extraEnv, nil, args...)
}

// runCodexSteps is runCodexIn with ready, when not nil, called once the
// process has started and before the first step (under the run's hang
// guard, ctx).
func runCodexSteps(t *testing.T, bin string, c codexCase, project, state, codexCmd string, extraEnv []string, ready func(ctx context.Context, cmd *exec.Cmd), args ...string) (transcript, stdin []byte, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute) // a hang guard
	defer cancel()
	var hooks caseHooks // hooks_session_test.go
	if err := writeCodexProject(t, c, project, &hooks); err != nil {
		t.Fatal(err)
	}
	// The project's real path: codex reports it resolved.
	project, err := filepath.EvalSymlinks(project)
	if err != nil {
		t.Fatal(err)
	}
	env := trustedBinaryEnv(t, ctx, bin, project, state, extraEnv...)
	cmd := exec.CommandContext(ctx, bin, append([]string{"--stdio", "--session-id", "s1", "--project", project, "--provider", "codex", "--codex", codexCmd}, args...)...)
	cmd.Env = env
	cmd.Dir = project
	inR, inW := io.Pipe()
	cmd.Stdin = inR
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var errBuf syncBuffer
	cmd.Stderr = &errBuf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Only ctx bounds a wait: a live case runs the real codex for up to
	// nine turns with hooks, which on a loaded 2-core machine outlasts a
	// per-step timer without anything being wrong.
	s := &session{t: t, stdin: inW, lines: make(chan string, 1024), result: make(chan int, 1), untimed: true}
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(nil, 64<<20)
		for sc.Scan() {
			s.lines <- sc.Text()
		}
		close(s.lines)
		err := cmd.Wait()
		code := 0
		if err != nil {
			code = -1
			if cmd.ProcessState != nil {
				code = cmd.ProcessState.ExitCode()
			}
		}
		s.result <- code
	}()
	if ready != nil {
		ready(ctx, cmd)
	}
	for i, step := range strings.Split(strings.TrimSpace(string(c.steps)), "\n") {
		if err := s.step(ctx, strings.TrimRight(step, "\r")); err != nil {
			t.Fatalf("%s: step %d %q: %v\nstdout so far:\n%s\nstderr:\n%s", c.path, i+1, step, err, strings.Join(s.got, "\n"), errBuf.String())
		}
	}
	got, err := s.end(ctx)
	if err != nil {
		t.Fatalf("%v\nstderr:\n%s", err, errBuf.String())
	}
	return hooks.normalise(bytes.ReplaceAll(got, []byte(project), []byte("$PROJECT"))), s.sent.Bytes(), errBuf.String()
}

// writeCodexProject writes the case's project files into project, the
// hook placeholders expanded by hooks.
func writeCodexProject(t *testing.T, c codexCase, project string, hooks *caseHooks) error {
	for name, data := range c.project {
		p := filepath.Join(project, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o777); err != nil {
			return err
		}
		if err := os.WriteFile(p, hooks.expand(t, data), 0o666); err != nil {
			return err
		}
	}
	return nil
}

// TestCodexBackend replays every codex case through the real binary with
// `openmax fake-app-server` as codex.
func TestCodexBackend(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary; skipped in -short mode")
	}
	bin := buildBinary(t)
	for _, path := range codexCases(t) {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".txtar"), func(t *testing.T) {
			t.Parallel()
			c := loadCodexCase(t, path)
			if c.appServer == nil {
				t.Fatalf("%s has no app-server.jsonl: record it with OPENMAX_RECORD_CODEX=1 go test ./cmd/openmax -run TestCodexBackendLive", path)
			}
			recorded := filepath.Join(t.TempDir(), "app-server.jsonl")
			if err := os.WriteFile(recorded, c.appServer, 0o644); err != nil {
				t.Fatal(err)
			}
			log := filepath.Join(t.TempDir(), "fake.log")
			transcript, stdin, stderr := runCodexCase(t, bin, c, bin+" fake-app-server --log "+log+" --transcript "+recorded, nil)
			checkTranscript(t, transcript, stdin)
			if err := golden.Section(path, "transcript", "got", transcript, *update); err != nil {
				t.Errorf("%v\nstderr:\n%s", err, stderr)
			}
			if strings.Contains(stderr, "MISS") || strings.Contains(stderr, "miss") {
				t.Errorf("the fake app-server missed:\n%s", stderr)
			}
		})
	}
}

// TestCodexBackendLive runs every codex case against the real codex.
func TestCodexBackendLive(t *testing.T) {
	if testing.Short() {
		t.Skip("runs codex; skipped in -short mode")
	}
	codex := codexBinary(t)
	bin := buildBinary(t)
	record := os.Getenv("OPENMAX_RECORD_CODEX") == "1"
	for _, path := range codexCases(t) {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".txtar"), func(t *testing.T) {
			t.Parallel()
			c := loadCodexCase(t, path)
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute) // a hang guard
			defer cancel()
			dir := t.TempDir()
			sc := filepath.Join(dir, "scenario.yaml")
			if err := os.WriteFile(sc, c.scenario, 0o644); err != nil {
				t.Fatal(err)
			}
			fake := startServer(t, ctx, bin, "fake-provider", "--scenario", sc)
			env := liveCodexEnv(t, dir, fake.URL)
			appServer := filepath.Join(dir, "app-server.jsonl")
			transcript, stdin, stderr := runCodexCase(t, bin, c, codex, env, "--codex-transcript", appServer)
			checkTranscript(t, transcript, stdin)
			if record {
				data, err := os.ReadFile(appServer)
				if err != nil {
					t.Fatal(err)
				}
				if err := golden.Section(path, "app-server.jsonl", "recorded", data, true); err != nil {
					t.Fatal(err)
				}
				if err := golden.Section(path, "transcript", "got", transcript, true); err != nil {
					t.Fatal(err)
				}
				return
			}
			if err := golden.Section(path, "transcript", "live codex", transcript, false); err != nil {
				t.Errorf("%v\nThe real codex now leads openmax to other events: if that is codex's change, re-record with OPENMAX_RECORD_CODEX=1 go test ./cmd/openmax -run TestCodexBackendLive\nstderr:\n%s", err, stderr)
			}
		})
	}
}

// The continue case runs two processes on one project and state: the
// second with --continue. Its archive has steps and steps-2, and the
// app-server.jsonl and transcript sections of each run (-2 for the
// second).
const codexContinueCase = "../../golden/codex/continue/continue.txtar"

func TestCodexBackendContinue(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary; skipped in -short mode")
	}
	bin := buildBinary(t)
	live := os.Getenv("OPENMAX_RECORD_CODEX") == "1"
	a, err := txtar.ParseFile(codexContinueCase)
	if err != nil {
		t.Fatal(err)
	}
	sections := map[string][]byte{}
	for _, f := range a.Files {
		sections[f.Name] = f.Data
	}
	project, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	state := t.TempDir()
	var env []string
	codexCmd := func(run string) (string, string) {
		recorded := filepath.Join(t.TempDir(), "app-server.jsonl")
		if err := os.WriteFile(recorded, sections["app-server"+run+".jsonl"], 0o644); err != nil {
			t.Fatal(err)
		}
		return bin + " fake-app-server --transcript " + recorded, ""
	}
	if live {
		codex := codexBinary(t)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		dir := t.TempDir()
		sc := filepath.Join(dir, "scenario.yaml")
		if err := os.WriteFile(sc, sections["fake.yaml"], 0o644); err != nil {
			t.Fatal(err)
		}
		fake := startServer(t, ctx, bin, "fake-provider", "--scenario", sc)
		env = liveCodexEnv(t, dir, fake.URL)
		codexCmd = func(string) (string, string) { return codex, filepath.Join(t.TempDir(), "app-server.jsonl") }
	}
	for _, run := range []string{"", "-2"} {
		c := codexCase{path: codexContinueCase, steps: sections["steps"+run]}
		cmd, record := codexCmd(run)
		var args []string
		if run != "" {
			args = append(args, "--continue")
		}
		if record != "" {
			args = append(args, "--codex-transcript", record)
		}
		transcript, stdin, stderr := runCodexIn(t, bin, c, project, state, cmd, env, args...)
		checkTranscript(t, transcript, stdin)
		if record != "" {
			data, err := os.ReadFile(record)
			if err != nil {
				t.Fatal(err)
			}
			if err := golden.Section(codexContinueCase, "app-server"+run+".jsonl", "recorded", data, true); err != nil {
				t.Fatal(err)
			}
		}
		if err := golden.Section(codexContinueCase, "transcript"+run, "got", transcript, *update || live); err != nil {
			t.Errorf("%v\nstderr:\n%s", err, stderr)
		}
	}
}

// liveCodexEnv is the environment of a real codex run offline: its own
// CODEX_HOME under dir whose config names the fake provider at base, and
// proxies at a closed loopback port so nothing leaves the machine.
func liveCodexEnv(t *testing.T, dir, base string) []string {
	t.Helper()
	codexHome := filepath.Join(dir, "codex-home")
	if err := codexscenario.WriteCodexHome(codexHome, base, 2); err != nil {
		t.Fatal(err)
	}
	return codexscenario.OfflineEnv(dir, codexHome)
}

// dyingAppServer is a stand-in app-server (a shell script) that answers
// every request, then, on turn/start, streams one delta and exits as a
// crashed server would.
const dyingAppServer = `while read -r line; do
  id=$(printf '%s' "$line" | sed -n 's/^{"id":\([0-9]*\),.*/\1/p')
  case "$line" in
  *'"turn/start"'*)
    printf '{"id":%s,"result":{"turn":{"id":"u1","status":"inProgress","items":[]}}}\n' "$id"
    printf '{"method":"turn/started","params":{"threadId":"th1","turn":{"id":"u1","status":"inProgress","items":[]}}}\n'
    printf '{"method":"item/agentMessage/delta","params":{"threadId":"th1","turnId":"u1","itemId":"m1","delta":"Half an ans"}}\n'
    echo "panic: the stand-in crashed" >&2
    exit 101;;
  *'"id"'*)
    printf '{"id":%s,"result":{"thread":{"id":"th1"},"userAgent":"x","codexHome":"/","platformFamily":"unix","platformOs":"linux"}}\n' "$id";;
  esac
done
`

// TestCodexBackendServerDies: an app-server that dies during a turn ends
// that turn with error and done error (the streamed text closed first);
// the next turn starts a new app-server, which resumes the thread.
func TestCodexBackendServerDies(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary; skipped in -short mode")
	}
	bin := buildBinary(t)
	script := filepath.Join(t.TempDir(), "dying-app-server.sh")
	if err := os.WriteFile(script, []byte(dyingAppServer), 0o755); err != nil {
		t.Fatal(err)
	}
	c := codexCase{path: "dying app-server", steps: []byte(`> {"cmd":"user","text":"Hi"}
< done
> {"cmd":"user","text":"Again"}
< done
`)}
	recorded := filepath.Join(t.TempDir(), "app-server.jsonl")
	transcript, stdin, stderr := runCodexCase(t, bin, c, "sh "+script, nil, "--codex-transcript", recorded)
	checkTranscript(t, transcript, stdin)
	lines, err := os.ReadFile(recorded)
	if err != nil {
		t.Fatal(err)
	}
	if starts, resumes := strings.Count(string(lines), `"method":"thread/start"`), strings.Count(string(lines), `"method":"thread/resume","params":{"approvalPolicy":"untrusted","cwd"`); starts != 1 || resumes != 1 {
		t.Fatalf("thread/start %d times and thread/resume %d times, want once each (the second app-server resumes the thread):\n%s", starts, resumes, lines)
	}
	want := `{"session_id":"s1","type":"token","text":"Half an ans"}
{"session_id":"s1","type":"message_done","text":"Half an ans"}
{"session_id":"s1","type":"error","message":"codex app-server ended during the turn"}
{"session_id":"s1","type":"done","stop_reason":"error"}
`
	if n := strings.Count(string(transcript), want); n != 2 {
		t.Fatalf("want each turn to end so (%d did):\n%s\nstderr:\n%s", n, transcript, stderr)
	}
	if !strings.HasSuffix(string(transcript), "exit: 1\n") {
		t.Fatalf("exit code: %s", transcript)
	}
	if !strings.Contains(stderr, "panic: the stand-in crashed") {
		t.Fatalf("the app-server's stderr is not on openmax's stderr:\n%s", stderr)
	}
}

// TestCodexPrompt: -p runs its one turn inside codex too, printing the
// reply text (the recorded dynamic_tool session, played by fake-app-server:
// openmax's read_file runs for codex, and both texts are printed).
func TestCodexPrompt(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary; skipped in -short mode")
	}
	t.Parallel()
	bin := buildBinary(t)
	c := loadCodexCase(t, filepath.Join(codexCasesDir, "dynamic_tool.txtar"))
	recorded := filepath.Join(t.TempDir(), "app-server.jsonl")
	if err := os.WriteFile(recorded, c.appServer, 0o644); err != nil {
		t.Fatal(err)
	}
	project, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(project, "notes.txt"), c.project["notes.txt"], 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-p", "What do the notes say?", "--project", project, "--provider", "codex",
		"--codex", bin+" fake-app-server --transcript "+recorded)
	cmd.Env = trustedBinaryEnv(t, ctx, bin, project, "")
	cmd.Dir = project
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("openmax -p: %v\n%s", err, stderr.String())
	}
	if got, want := stdout.String(), "Let me read it.\nThe notes say hi.\n"; got != want {
		t.Fatalf("stdout %q, want %q\nstderr:\n%s", got, want, stderr.String())
	}
}
