package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/openmax/openmax/core/config"
	"github.com/openmax/openmax/core/tool/builtin"
	"github.com/openmax/openmax/core/wire"
	"github.com/openmax/openmax/provider/clock"
)

func runCLI(t *testing.T, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	wd, _ := os.Getwd()
	code = run(ctx, args, strings.NewReader(stdin), &out, &errb, env{clock: clock.Real{}, getenv: trustedEnv(t, func(string) string { return "" }, "/", wd)})
	return out.String(), errb.String(), code
}

func TestSpecCommand(t *testing.T) {
	text, _, code := runCLI(t, "", "--spec", "stdio")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, d := range append(append(append([]*wire.Def{}, wire.Events...), wire.Lines...), wire.Commands...) {
		if !strings.Contains(text, d.Name) {
			t.Errorf("--spec stdio does not mention %s", d.Name)
		}
		for _, f := range d.Fields {
			if !strings.Contains(text, f.Name) {
				t.Errorf("--spec stdio does not mention %s.%s", d.Name, f.Name)
			}
		}
	}
	schema, _, code := runCLI(t, "", "--spec", "stdio", "--json")
	var doc map[string]any
	if code != 0 || json.Unmarshal([]byte(schema), &doc) != nil || doc["$defs"] == nil {
		t.Errorf("--spec stdio --json: exit %d, not a JSON Schema:\n%.200s", code, schema)
	}
	if _, stderr, code := runCLI(t, "", "--spec", "grpc"); code != 2 || !strings.Contains(stderr, `unknown contract "grpc"`) {
		t.Errorf("--spec grpc: exit %d, stderr %q", code, stderr)
	}
}

func TestCheckCommand(t *testing.T) {
	good := loadCase(t, sessionPath("tool_loop")).transcript
	stream := string(good[:bytes.LastIndex(good, []byte("exit:"))])
	out, _, code := runCLI(t, stream, "--check", "--stdio")
	if code != 0 {
		t.Fatalf("exit %d on a golden transcript:\n%s", code, out)
	}
	if n := strings.Count(out, ": ok\n"); n != strings.Count(stream, "\n") {
		t.Errorf("%d ok verdicts for %d lines", n, strings.Count(stream, "\n"))
	}
	lines := strings.Split(strings.TrimSpace(stream), "\n")
	dup := strings.Join(append(lines, lines[len(lines)-1]), "\n") + "\n" // a duplicated done
	out, stderr, code := runCLI(t, dup, "--check", "--stdio", "--strict")
	last := len(lines) + 1
	if code != 1 || !strings.Contains(out, strings.Join([]string{itoa(last), ": done: done with no turn open"}, "")) || !strings.Contains(stderr, "1 violation") {
		t.Errorf("duplicated done, --strict: exit %d\n%s\n%s", code, out, stderr)
	}
	// The spec names no first line of a turn, so without the client's
	// stdin a lone done is a turn of its own; with it, the extra done shows.
	if out, _, code := runCLI(t, dup, "--check", "--stdio"); code != 0 {
		t.Errorf("duplicated done, spec mode without --input: exit %d\n%s", code, out)
	}
	in := filepath.Join(t.TempDir(), "stdin.jsonl")
	if err := os.WriteFile(in, []byte(`{"cmd":"user","text":"hi"}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, _, code := runCLI(t, dup, "--check", "--stdio", "--input", in); code != 1 || !strings.Contains(out, "end: 2 done lines answer only 1 user commands") {
		t.Errorf("duplicated done, spec mode with --input: exit %d\n%s", code, out)
	}
	if _, stderr, code := runCLI(t, "", "--strict"); code != 2 || !strings.Contains(stderr, "--strict needs --check") {
		t.Errorf("--strict alone: exit %d: %s", code, stderr)
	}
	out, _, code = runCLI(t, "", "--check", "--stdio")
	if code != 1 || !strings.Contains(out, "end: no hello") {
		t.Errorf("empty stream: exit %d: %s", code, out)
	}
	if _, stderr, code := runCLI(t, "", "--check"); code != 2 || !strings.Contains(stderr, "--check needs --stdio") {
		t.Errorf("--check alone: exit %d: %s", code, stderr)
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func TestUsageErrorsStayOffStdout(t *testing.T) {
	// A missing or malformed --script, --scenario or --project is a
	// failure (exit 1): TestExitCodesOneRule.
	tests := []struct {
		args   []string
		stderr string
	}{
		{[]string{"--stdio"}, "--stdio needs --provider"},
		{[]string{"--stdio", "--provider", "gpt"}, `unknown --provider "gpt"`},
		{[]string{"--stdio", "--provider", "script"}, "needs --script FILE"},
		{[]string{"--stdio", "--provider", "echo", "--max-iterations", "0"}, "at least 1"},
		{[]string{"--stdio", "--provider", "openai"}, "needs an API key: set OPENAI_API_KEY"},
		{[]string{"--stdio", "--provider", "anthropic"}, "needs an API key: set ANTHROPIC_API_KEY"},
		{[]string{"--stdio", "--provider", "bedrock"}, "--provider bedrock needs AWS credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"},
		{[]string{"--stdio", "--provider", "bedrock", "--api", "streaming"}, `unknown --api "streaming" (known: converse, invoke)`},
		{[]string{"--stdio", "--provider", "gemini"}, "--provider gemini needs an API key: set GEMINI_API_KEY (or GOOGLE_API_KEY)"},
		{[]string{"--stdio", "--provider", "echo", "--base-url", "http://127.0.0.1:1"}, "--base-url is only for"},
		{[]string{"--stdio", "--provider", "echo", "--max-attempts", "0"}, "at least 1"},
		{[]string{"fake-provider"}, "give --scenario FILE or --cassette FILE"},
		{[]string{"--bogus"}, "flag provided but not defined"},
		{[]string{"stray"}, `unknown command "stray"`},
		{[]string{"--stdio", "stray"}, `unexpected argument "stray"`},
		{[]string{"replya"}, `did you mean "replay"?`},
		{nil, "nothing to do"},
	}
	for _, tt := range tests {
		stdout, stderr, code := runCLI(t, `{"cmd":"user","text":"hi"}`+"\n", tt.args...)
		if code != 2 || stdout != "" || !strings.Contains(stderr, tt.stderr) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q (want it to contain %q)", tt.args, code, stdout, stderr, tt.stderr)
		}
	}
}

// buildBinary builds openmax once per test binary run and returns its
// path; every test that drives the real process shares it.
func buildBinary(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "openmax-bin-")
		if err != nil {
			binErr = err
			return
		}
		binDir = dir
		bin := filepath.Join(dir, "openmax")
		if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
			binErr = fmt.Errorf("go build: %v\n%s", err, out)
			return
		}
		binPath = bin
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

var (
	binOnce sync.Once
	binPath string
	binDir  string
	binErr  error
)

// trustedBinaryEnv is the environment for running the real binary bin:
// fresh state and config directories (state, when given, is the state
// directory), then extra (a later entry wins). project is trusted in it.
func trustedBinaryEnv(t *testing.T, ctx context.Context, bin, project, state string, extra ...string) []string {
	t.Helper()
	if state == "" {
		state = t.TempDir()
	}
	// Not the agent marker: the suite may itself run under an openmax
	// tool, and an openmax started with it trusts nothing.
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, builtin.AgentSpawnedEnv+"=") })
	env = append(env, "XDG_STATE_HOME="+state, "XDG_CONFIG_HOME="+t.TempDir())
	env = append(env, extra...)
	trust := exec.CommandContext(ctx, bin, "trust", project)
	trust.Env = env
	if out, err := trust.CombinedOutput(); err != nil || !strings.Contains(string(out), "trusted "+project) {
		t.Fatalf("openmax trust %s: %v %s", project, err, out)
	}
	return env
}

var (
	progMu    sync.Mutex
	progDir   string
	progPaths = map[string]string{}
)

// testdataProgram builds the helper program testdata/NAME once for the
// test binary and returns its path.
func testdataProgram(t *testing.T, name string) string {
	t.Helper()
	progMu.Lock()
	defer progMu.Unlock()
	if p, ok := progPaths[name]; ok {
		return p
	}
	if progDir == "" {
		dir, err := os.MkdirTemp("", "openmax-testprogs-")
		if err != nil {
			t.Fatal(err)
		}
		progDir = dir
	}
	bin := filepath.Join(progDir, name)
	if out, err := exec.Command("go", "build", "-o", bin, "./testdata/"+name).CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", name, err, out)
	}
	progPaths[name] = bin
	return bin
}

// TestMain removes the shared binary and helper programs after the tests.
func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	if progDir != "" {
		os.RemoveAll(progDir)
	}
	os.Exit(code)
}

// TestProcessSignalCancelsTurn runs the real binary: SIGTERM during a turn
// is a shutdown, so the turn ends cancelled, the process exits 0 and stdout
// holds only protocol lines that pass the checker.
func TestProcessSignalCancelsTurn(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary; skipped in -short mode")
	}
	bin := buildBinary(t)
	dir := t.TempDir()
	sc := filepath.Join(dir, "s.yaml")
	if err := os.WriteFile(sc, []byte("replies:\n  - chunks:\n      - text: working\n      - stall: true\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmdEnv := trustedBinaryEnv(t, ctx, bin, dir, "")
	cmd := exec.CommandContext(ctx, bin, "--stdio", "--provider", "script", "--script", sc, "--project", dir)
	cmd.Env = cmdEnv
	stdin, _ := cmd.StdinPipe()
	stdoutPipe, _ := cmd.StdoutPipe()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if _, err := stdin.Write([]byte(`{"cmd":"user","text":"go"}` + "\n")); err != nil {
		t.Fatal(err)
	}
	var lines []string
	sc2 := bufio.NewScanner(stdoutPipe)
	for sc2.Scan() {
		lines = append(lines, sc2.Text())
		if strings.Contains(sc2.Text(), `"type":"token"`) {
			if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
		}
	}
	err := cmd.Wait()
	if err != nil {
		t.Fatalf("exit: %v\nstderr: %s", err, stderr.String())
	}
	if last := lines[len(lines)-1]; !strings.Contains(last, `"stop_reason":"cancelled"`) {
		t.Errorf("last line %s, want done cancelled", last)
	}
	var hello wire.Hello
	if err := json.Unmarshal([]byte(lines[0]), &hello); err != nil || hello.Project != dir || !strings.HasPrefix(hello.SessionID, "s-") {
		t.Errorf("hello %s", lines[0])
	}
	_, cerr := wire.CheckStreamStrict(strings.NewReader(strings.Join(lines, "\n")), func(v wire.Verdict) {
		if v.Err != nil {
			t.Errorf("line %d: %v", v.Line, v.Err)
		}
	})
	if cerr != nil {
		t.Fatal(cerr)
	}
}

// TestExitCodes: the exit code follows the last turn (1 after error, else
// 0, truncated included), and EOF behaves like quit.
func TestExitCodes(t *testing.T) {
	tests := []struct {
		yaml  string
		turns int
		code  int
	}{
		{"replies:\n  - chunks: [{error: boom}]\n", 1, 1},
		{"replies:\n  - chunks: [{error: boom}]\n  - text: fine\n", 2, 0},
		{"replies:\n  - text: fine\n  - chunks: [{error: boom}]\n", 2, 1},
		{"replies:\n  - chunks: [{text: a}, {died: reset}]\n", 1, 0},
	}
	for _, tt := range tests {
		sc := filepath.Join(t.TempDir(), "s.yaml")
		if err := os.WriteFile(sc, []byte(tt.yaml), 0o644); err != nil {
			t.Fatal(err)
		}
		out, code := runTurns(t, tt.turns, "--stdio", "--provider", "script", "--script", sc, "--project", "/")
		if code != tt.code {
			t.Errorf("%q: exit %d, want %d\n%s", tt.yaml, code, tt.code, out)
		}
	}
}

// runTurns sends n user commands, each after the previous done, then EOF.
func runTurns(t *testing.T, n int, args ...string) (string, int) {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	codec := make(chan int, 1)
	go func() {
		codec <- run(ctx, args, inR, outW, io.Discard, env{clock: clock.Real{}, getenv: trustedEnv(t, func(string) string { return "" }, "/")})
		outW.Close()
	}()
	lines := make(chan string, 64)
	go func() {
		sc := bufio.NewScanner(outR)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	var out strings.Builder
	for i := 0; i < n; i++ {
		if _, err := inW.Write([]byte(`{"cmd":"user","text":"go"}` + "\n")); err != nil {
			t.Fatal(err)
		}
		for line := range lines {
			out.WriteString(line + "\n")
			if strings.Contains(line, `"type":"done"`) {
				break
			}
		}
	}
	inW.Close()
	for line := range lines {
		out.WriteString(line + "\n")
	}
	select {
	case code := <-codec:
		return out.String(), code
	case <-ctx.Done():
		t.Fatal("openmax did not exit")
		return "", 0
	}
}

// TestFakeProviderCommand: the subcommand prints its base URL first and
// serves the scenario over loopback until it is stopped.
func TestFakeProviderCommand(t *testing.T) {
	sc := filepath.Join(t.TempDir(), "s.yaml")
	if err := os.WriteFile(sc, []byte("replies:\n  - status: 503\n    headers: {Retry-After: \"4\"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	srvCtx, stop := context.WithCancel(ctx)
	outR, outW := io.Pipe()
	codec := make(chan int, 1)
	go func() {
		codec <- run(srvCtx, []string{"fake-provider", "--scenario", sc, "--addr", "127.0.0.1:0"}, strings.NewReader(""), outW, io.Discard, env{clock: clock.Real{}})
		outW.Close()
	}()
	first, err := bufio.NewReader(outR).ReadString('\n')
	if err != nil || !strings.HasPrefix(first, "http://127.0.0.1:") {
		t.Fatalf("first line %q, %v", first, err)
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSpace(first)+"/v1/chat/completions", strings.NewReader(`{"model":"m","stream":true,"messages":[]}`))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After") != "4" {
		t.Errorf("got %d, Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	stop()
	if code := <-codec; code != 0 {
		t.Errorf("exit %d after stop", code)
	}
}

// TestPromptMode: -p runs one turn with the answer on stdout and the rest
// on stderr; exit 4 for max_iterations, 1 for error, 0 otherwise.
func TestPromptMode(t *testing.T) {
	tests := []struct {
		yaml   string
		extra  []string
		stdout string
		stderr string
		code   int
	}{
		{"replies:\n  - chunks: [{text: 'Hello, '}, {text: world.}, {finish: stop}]\n", nil, "Hello, world.\n", "", 0},
		{"replies:\n  - chunks: [{text: partial}, {error: boom}]\n", nil, "partial\n", "openmax: boom", 1},
		{"replies:\n  - tool_calls: [{id: c1, name: none}]\n", []string{"--max-iterations", "1"}, "", "the turn ended max_iterations", 4},
		{"replies:\n  - status: 503\n  - text: later\n", []string{"--max-attempts", "1"}, "", "HTTP 503", 1},
		{"replies:\n  - chunks: [{text: cut}, {died: reset}]\n", nil, "cut\n", "the turn ended truncated", 0},
	}
	for _, tt := range tests {
		sc := filepath.Join(t.TempDir(), "s.yaml")
		if err := os.WriteFile(sc, []byte(tt.yaml), 0o644); err != nil {
			t.Fatal(err)
		}
		args := append([]string{"-p", "go", "--provider", "script", "--script", sc}, tt.extra...)
		stdout, stderr, code := runCLI(t, "", args...)
		if stdout != tt.stdout || code != tt.code || !strings.Contains(stderr, tt.stderr) {
			t.Errorf("%q: exit %d, stdout %q, stderr %q", tt.yaml, code, stdout, stderr)
		}
	}
	if _, stderr, code := runCLI(t, "", "-p", "go", "--stdio", "--provider", "echo"); code != 2 || !strings.Contains(stderr, "pick one") {
		t.Errorf("-p with --stdio: exit %d %s", code, stderr)
	}
	if stdout, _, code := runCLI(t, "", "-p", "echo me", "--provider", "echo"); code != 0 || stdout != "echo me\n" {
		t.Errorf("-p with echo: exit %d %q", code, stdout)
	}
}

// TestContinue: a session is saved as it runs; --continue resumes it with
// hello continued and a transcript line, refuses while another process owns
// it, and exits 2 where there is no session.
func TestContinue(t *testing.T) {
	state, project := t.TempDir(), t.TempDir()
	e := env{clock: clock.Real{}, getenv: trustedEnv(t, func(k string) string {
		if k == "XDG_STATE_HOME" {
			return state
		}
		return ""
	}, project)}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	runWith := func(stdin string, args ...string) (string, string, int) {
		var out, errb bytes.Buffer
		code := run(ctx, args, strings.NewReader(stdin), &out, &errb, e)
		return out.String(), errb.String(), code
	}
	if _, stderr, code := runWith("", "--stdio", "--provider", "echo", "--project", project, "--continue"); code != 2 || !strings.Contains(stderr, "no prior session") {
		t.Fatalf("no session: exit %d %s", code, stderr)
	}
	out, stderr, code := runWith(`{"cmd":"user","text":"remember the word lantern"}`+"\n", "--stdio", "--provider", "echo", "--project", project, "--session-id", "s-first")
	if code != 0 || !strings.Contains(out, `"type":"done"`) {
		t.Fatalf("first session: exit %d\n%s%s", code, out, stderr)
	}
	out, stderr, code = runWith("", "--stdio", "--provider", "echo", "--project", project, "--continue")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 2 {
		t.Fatalf("continue: exit %d\n%s%s", code, out, stderr)
	}
	if !strings.Contains(lines[0], `"session_id":"s-first"`) || !strings.Contains(lines[0], `"continued":true`) {
		t.Errorf("hello %s", lines[0])
	}
	want := `{"type":"transcript","session_id":"s-first","messages":[{"role":"user","content":"remember the word lantern"},{"role":"assistant","content":"remember the word lantern"}],"truncated":false}`
	if lines[1] != want {
		t.Errorf("transcript\n got %s\nwant %s", lines[1], want)
	}
	if _, err := wire.CheckStreamStrict(strings.NewReader(out), func(v wire.Verdict) {
		if v.Err != nil {
			t.Errorf("checker: %v", v.Err)
		}
	}); err != nil {
		t.Fatal(err)
	}

	// While one process owns the session, a second --continue is refused
	// before the handshake.
	inR, inW := io.Pipe()
	held := make(chan int, 1)
	var heldOut bytes.Buffer
	firstLine := make(chan struct{})
	go func() {
		held <- run(ctx, []string{"--stdio", "--provider", "echo", "--project", project, "--continue"}, inR, writerFunc(func(p []byte) (int, error) {
			if heldOut.Len() == 0 {
				defer close(firstLine)
			}
			return heldOut.Write(p)
		}), io.Discard, e)
	}()
	<-firstLine
	out, stderr, code = runWith("", "--stdio", "--provider", "echo", "--project", project, "--continue")
	if code != 1 || out != "" || !strings.Contains(stderr, "owned") {
		t.Errorf("second owner: exit %d, stdout %q, stderr %q", code, out, stderr)
	}
	inW.Close()
	if code := <-held; code != 0 {
		t.Errorf("owner exit %d", code)
	}
}

// TestTrust: turns run only in a trusted project; `openmax trust` trusts
// one, and an approval_mode is saved for it and survives a restart.
func TestTrust(t *testing.T) {
	project, cfg := t.TempDir(), t.TempDir()
	e := env{clock: clock.Real{}, getenv: func(k string) string {
		if k == "XDG_CONFIG_HOME" {
			return cfg
		}
		return ""
	}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	runWith := func(stdin string, args ...string) (string, string, int) {
		var out, errb bytes.Buffer
		code := run(ctx, args, strings.NewReader(stdin), &out, &errb, e)
		return out.String(), errb.String(), code
	}
	out, _, code := runWith(`{"cmd":"user","text":"hi"}`+"\n", "--stdio", "--provider", "echo", "--project", project)
	if code != 0 || !strings.Contains(out, "is not trusted") || !strings.Contains(out, `"stop_reason":"refused"`) {
		t.Errorf("untrusted: exit %d\n%s", code, out)
	}
	if _, stderr, code := runWith("", "-p", "hi", "--provider", "echo", "--project", project); code != 1 || !strings.Contains(stderr, "not trusted") {
		t.Errorf("-p untrusted: exit %d %s", code, stderr)
	}
	if out, _, code := runWith("", "trust", project); code != 0 || out != "trusted "+project+"\n" {
		t.Fatalf("trust: exit %d %q", code, out)
	}
	out, _, _ = runWith(`{"cmd":"approval_mode","mode":"readonly"}`+"\n"+`{"cmd":"user","text":"hi"}`+"\n", "--stdio", "--provider", "echo", "--project", project)
	if !strings.Contains(out, `{"type":"approval_mode","mode":"readonly"}`) || !strings.Contains(out, `"stop_reason":"stop"`) {
		t.Errorf("trusted:\n%s", out)
	}
	p, err := config.Open(filepath.Join(cfg, "openmax"))
	if err != nil || p.Mode(project) != "readonly" {
		t.Errorf("the mode was not saved: %v %q", err, p.Mode(project))
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
