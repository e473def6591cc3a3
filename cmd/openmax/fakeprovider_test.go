package main

// Foreign clients: the official Node SDKs, installed from npm, recorded
// through `openmax record --proxy` and replayed through `openmax
// fake-provider --cassette`, all as real child processes over loopback.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/openmax/openmax/internal/citest"
)

// npmDir holds the pinned SDKs (package.json, package-lock.json) and the
// client script the tests run.
const npmDir = "testdata/npm"

// npmModules installs the pinned SDKs with `npm ci` into a cache folder
// outside the repository, named by the lockfile's hash, and reuses it when
// it is there (.ci/run fills the same folder before the tests). It returns
// a fresh folder holding the client script beside a node_modules link. The
// test is skipped only when node or npm is missing outside CI (needNode),
// or npm cannot reach its registry outside CI (npmInstallSkip).
func npmModules(t *testing.T) string {
	t.Helper()
	needNode(t, "the foreign-client tests")
	lock, err := os.ReadFile(filepath.Join(npmDir, "package-lock.json"))
	if err != nil {
		t.Fatal(err)
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		t.Fatalf("no cache folder for the npm install: %v", err)
	}
	sum := sha256.Sum256(lock)
	dir := filepath.Join(cache, "openmax-npm", hex.EncodeToString(sum[:])[:16])
	if _, err := os.Stat(filepath.Join(dir, "node_modules", ".openmax-installed")); err != nil {
		installNPM(t, dir)
	}
	work := t.TempDir()
	script, err := os.ReadFile(filepath.Join(npmDir, "client.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(work, "client.mjs"), script, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "node_modules"), filepath.Join(work, "node_modules")); err != nil {
		t.Fatal(err)
	}
	return work
}

// installNPM runs npm ci in a scratch folder beside dir and moves the
// result into place, so a failed or concurrent install never leaves a
// half-filled dir behind.
func installNPM(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		t.Fatal(err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), "install-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	for _, name := range []string{"package.json", "package-lock.json"} {
		data, err := os.ReadFile(filepath.Join(npmDir, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(tmp, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	start := time.Now()
	cmd := exec.CommandContext(ctx, "npm", "ci", "--ignore-scripts", "--no-audit", "--no-fund", "--prefer-offline")
	cmd.Dir = tmp
	if out, err := cmd.CombinedOutput(); err != nil {
		if why := npmInstallSkip(os.Getenv("CI"), out); why != "" {
			t.Skip(why)
		}
		t.Fatalf("npm ci: %v\n%s", err, out)
	}
	if err := os.WriteFile(filepath.Join(tmp, "node_modules", ".openmax-installed"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", ".openmax-installed")); err != nil {
		os.RemoveAll(dir) // a half-done install
	}
	if err := os.Rename(tmp, dir); err != nil {
		// Another test process got there first; its install is as good.
		if _, serr := os.Stat(filepath.Join(dir, "node_modules", ".openmax-installed")); serr != nil {
			t.Fatalf("moving the npm install into place: %v", err)
		}
	}
	t.Logf("npm ci took %v", time.Since(start).Round(time.Millisecond))
}

// npmCode is the error code a failed npm command reports ("npm error code
// ECONNREFUSED"; "npm ERR! code ..." before npm 10).
var npmCode = regexp.MustCompile(`(?m)^npm (?:error|ERR!) code ([A-Z_]+)\s*$`)

// npmUnreachable are the codes npm reports when it cannot reach its
// registry (no network, no DNS, a registry that refuses or never answers,
// or --offline with the package not cached).
var npmUnreachable = map[string]bool{
	"ECONNREFUSED": true, "ECONNRESET": true, "ENOTFOUND": true, "EAI_AGAIN": true, "ETIMEDOUT": true,
	"ENETUNREACH": true, "EHOSTUNREACH": true, "ERR_SOCKET_TIMEOUT": true, "ENOTCACHED": true,
}

// npmInstallSkip decides what a failed `npm ci` (its output out) does to
// the test: it returns why the test is skipped, or "" when it fails. The
// test command promises no network, so outside CI a registry npm cannot
// reach skips the foreign-client tests, saying so; in CI (the CI variable
// set, and not "false" or "0") it fails loudly, as every other install
// failure does everywhere.
func npmInstallSkip(ci string, out []byte) string {
	m := npmCode.FindSubmatch(out)
	if m == nil || !npmUnreachable[string(m[1])] {
		return ""
	}
	if citest.IsCI(ci) {
		return ""
	}
	return fmt.Sprintf("the foreign-client tests need the pinned npm packages (%s), and npm cannot reach its registry to install them (%s); "+
		"skipped outside CI (with CI=true this fails). Install them once with network access: see docs/testing.md", npmDir, m[1])
}

// needNode skips the test, naming what needs them, when node or npm is not
// on PATH; in CI, which installs them, it fails instead.
func needNode(t *testing.T, what string) {
	t.Helper()
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			if citest.IsCI(os.Getenv("CI")) {
				t.Fatalf("%s need %s on PATH (Node.js 20 or later), and CI must have it: %v", what, tool, err)
			}
			t.Skipf("%s need %s on PATH (Node.js 20 or later); skipped outside CI: %v", what, tool, err)
		}
	}
}

// server is an openmax child process that prints its base URL first.
type childServer struct {
	cmd    *exec.Cmd
	URL    string
	stderr *syncBuffer
	done   chan struct{} // closed once stdout was read to its end
}

// startServer runs `bin args...` and waits for the base URL on its first
// stdout line.
func startServer(t *testing.T, ctx context.Context, bin string, args ...string) *childServer {
	t.Helper()
	s := &childServer{cmd: exec.CommandContext(ctx, bin, args...), stderr: &syncBuffer{}, done: make(chan struct{})}
	s.cmd.Stderr = s.stderr
	out, err := s.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(out)
	first, err := r.ReadString('\n')
	if err != nil || !strings.HasPrefix(first, "http://127.0.0.1:") {
		s.cmd.Process.Kill()
		s.cmd.Wait()
		t.Fatalf("%v: first line %q, %v\n%s", args, first, err, s.stderr)
	}
	s.URL = strings.TrimSpace(first)
	go func() {
		rest, _ := io.ReadAll(r)
		if len(rest) > 0 {
			t.Errorf("%v wrote more than its URL on stdout: %q", args, rest)
		}
		close(s.done)
	}()
	t.Cleanup(func() {
		if s.cmd.ProcessState == nil {
			s.cmd.Process.Kill()
			s.cmd.Wait()
		}
	})
	return s
}

// stop interrupts the server and returns its exit code.
func (s *childServer) stop(t *testing.T) int {
	t.Helper()
	if err := s.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	<-s.done
	err := s.cmd.Wait()
	if err != nil && s.cmd.ProcessState == nil {
		t.Fatal(err)
	}
	return s.cmd.ProcessState.ExitCode()
}

// runClient runs the Node client for vendor against base with HOME set to
// home; extra goes into its environment. It returns stdout and the exit
// code.
func runClient(t *testing.T, ctx context.Context, work, vendor, base, home string, extra ...string) (string, int) {
	t.Helper()
	cmd := exec.CommandContext(ctx, "node", "client.mjs", vendor)
	cmd.Dir = work
	cmd.Env = append(os.Environ(), "HOME="+home, "ANTHROPIC_BASE_URL="+base, "OPENAI_BASE_URL="+base+"/v1")
	cmd.Env = append(cmd.Env, extra...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err != nil && cmd.ProcessState == nil {
		t.Fatalf("node: %v", err)
	}
	if stderr.Len() > 0 {
		t.Logf("node %s stderr:\n%s", vendor, stderr.String())
	}
	return stdout.String(), cmd.ProcessState.ExitCode()
}

// foreignScenario answers the two turns of each client: Anthropic's first,
// then OpenAI's. Every reply scripts usage, which the Anthropic SDK needs
// in message_delta.
const foreignScenario = `replies:
  - text: "Hello from the first turn."
    usage: {prompt_tokens: 12, completion_tokens: 6}
  - chunks: [{text: "Second "}, {text: "turn, "}, {text: "in pieces."}, {usage: {prompt_tokens: 20, completion_tokens: 5}}, {finish: end_turn}]
  - text: "Hi, OpenAI side."
    usage: {prompt_tokens: 9, completion_tokens: 4}
  - chunks: [{text: "Once "}, {text: "more."}, {usage: {prompt_tokens: 15, completion_tokens: 2}}, {finish: stop}]
`

var foreignVendors = []string{"anthropic", "openai"}

// recordForeign records both clients through `openmax record --proxy` in
// front of a scripted fake provider, with HOME set to home. It returns
// the cassette and each client's output.
func recordForeign(t *testing.T, ctx context.Context, bin, work, home string) (string, map[string]string) {
	t.Helper()
	dir := t.TempDir()
	sc := filepath.Join(dir, "scenario.yaml")
	if err := os.WriteFile(sc, []byte(foreignScenario), 0o644); err != nil {
		t.Fatal(err)
	}
	upstream := startServer(t, ctx, bin, "fake-provider", "--scenario", sc)
	path := filepath.Join(dir, "foreign.yaml")
	proxy := startServer(t, ctx, bin, "record", "--proxy", "--upstream", upstream.URL, "--cassette", path)
	outs := map[string]string{}
	for _, v := range foreignVendors {
		out, code := runClient(t, ctx, work, v, proxy.URL, home)
		if code != 0 || strings.Count(out, "\n") != 2 {
			t.Fatalf("recording %s: exit %d\n%s", v, code, out)
		}
		outs[v] = out
	}
	if code := proxy.stop(t); code != 0 {
		t.Fatalf("record --proxy exited %d\n%s", code, proxy.stderr)
	}
	if code := upstream.stop(t); code != 0 {
		t.Fatalf("fake-provider --scenario exited %d\n%s", code, upstream.stderr)
	}
	return path, outs
}

// TestForeignClients records the Anthropic and OpenAI Node SDKs through
// the proxy with one HOME, then serves the cassette with fake-provider
// --cassette:
//
//   - under two other HOMEs the output is identical, every request is
//     served and nothing is logged as a MISS;
//   - with --no-default-ignores the per-run fields miss, and the log names
//     them;
//   - a request the cassette does not hold is answered once (no retry)
//     with a 400 in the vendor's error shape whose message the SDK
//     surfaces; the log has the MISS with the nearest interaction and the
//     differing field, and the fake provider exits 1.
func TestForeignClients(t *testing.T) {
	t.Parallel() // waits on child processes: overlaps the package's other slow tests
	work := npmModules(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	bin := buildBinary(t)
	path, recorded := recordForeign(t, ctx, bin, work, t.TempDir())
	want := map[string]string{
		"anthropic": "anthropic: \"Hello from the first turn.\" (end_turn)\nanthropic: \"Second turn, in pieces.\" (end_turn)\n",
		"openai":    "openai: \"Hi, OpenAI side.\" (stop)\nopenai: \"Once more.\" (stop)\n",
	}
	for _, v := range foreignVendors {
		if recorded[v] != want[v] {
			t.Errorf("%s live: %q, want %q", v, recorded[v], want[v])
		}
	}

	t.Run("replay", func(t *testing.T) {
		served := regexp.MustCompile(`(?m)^openmax fake-provider: request (\d): POST (/v1/messages|/v1/chat/completions): served interaction (\d) \(200\)$`)
		for round, home := range []string{t.TempDir(), t.TempDir()} {
			fp := startServer(t, ctx, bin, "fake-provider", "--cassette", path, "--pace", "instant")
			for _, v := range foreignVendors {
				out, code := runClient(t, ctx, work, v, fp.URL, home)
				if code != 0 || out != recorded[v] {
					t.Errorf("round %d, %s: exit %d, output %q, want %q", round, v, code, out, recorded[v])
				}
			}
			code := fp.stop(t)
			log := fp.stderr.String()
			lines := served.FindAllStringSubmatch(log, -1)
			ok := len(lines) == 4
			for i, m := range lines {
				ok = ok && m[1] == fmt.Sprint(i) && m[3] == fmt.Sprint(i)
			}
			if code != 0 || !ok || strings.Contains(log, "MISS") || !strings.Contains(log, "4 request(s): 4 served, 0 missed; all 4 interaction(s) served") {
				t.Errorf("round %d: exit %d, stderr:\n%s", round, code, log)
			}
		}
	})

	t.Run("strict", func(t *testing.T) {
		fp := startServer(t, ctx, bin, "fake-provider", "--cassette", path, "--pace", "instant", "--no-default-ignores")
		for _, v := range foreignVendors {
			if out, code := runClient(t, ctx, work, v, fp.URL, t.TempDir()); code != 3 || !strings.HasPrefix(out, "ERROR status=400 ") {
				t.Errorf("%s: exit %d, output %q", v, code, out)
			}
		}
		fp.stop(t)
		log := fp.stderr.String()
		for _, want := range []string{
			"request 0: POST /v1/messages: MISS, nearest interaction 0 differs in metadata.user_id, system\n",
			"request 1: POST /v1/chat/completions: MISS, nearest interaction 2 differs in messages[0].content, prompt_cache_key\n",
		} {
			if !strings.Contains(log, want) {
				t.Errorf("the log lacks %q:\n%s", want, log)
			}
		}
	})

	t.Run("miss", func(t *testing.T) {
		fp := startServer(t, ctx, bin, "fake-provider", "--cassette", path, "--pace", "instant")
		tests := []struct {
			vendor string
			want   string // the start of the client's ERROR line
			log    string
		}{
			{"anthropic", "ERROR status=400 type=invalid_request_error code= message=400 ",
				"request 0: POST /v1/messages: MISS, nearest interaction 0 differs in messages[0].content"},
			{"openai", "ERROR status=400 type=invalid_request_error code=replay_miss message=400 replay: no recorded interaction matches POST ",
				"request 1: POST /v1/chat/completions: MISS, nearest interaction 2 differs in messages[1].content"},
		}
		for _, tt := range tests {
			out, code := runClient(t, ctx, work, tt.vendor, fp.URL, t.TempDir(), "PROMPT=something else")
			if code != 3 || !strings.HasPrefix(out, tt.want) || !strings.Contains(out, "no recorded interaction matches POST") {
				t.Errorf("%s: exit %d, output %q", tt.vendor, code, out)
			}
		}
		code := fp.stop(t)
		log := fp.stderr.String()
		for _, tt := range tests {
			if strings.Count(log, "MISS") != 2 || !strings.Contains(log, tt.log+"\n") {
				t.Errorf("the log lacks %q (or a request was retried):\n%s", tt.log, log)
			}
		}
		if code != 1 || !strings.Contains(log, "2 request(s): 0 served, 2 missed; 4 of 4 interaction(s) never requested: 0, 1, 2, 3") {
			t.Errorf("exit %d, stderr:\n%s", code, log)
		}
	})
}
