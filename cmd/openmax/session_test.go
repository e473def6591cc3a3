package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"golang.org/x/tools/txtar"

	"github.com/openmax/openmax/core/config"
	"github.com/openmax/openmax/core/tool"
	"github.com/openmax/openmax/core/wire"
	"github.com/openmax/openmax/internal/golden"
	"github.com/openmax/openmax/provider"
	"github.com/openmax/openmax/provider/clock"
	fakeprovider "github.com/openmax/openmax/provider/fake"
	"github.com/openmax/openmax/provider/script"
)

// A session case is one txtar archive, golden/sessions/NAME.txtar: its
// comment says what the case shows about the contract, and its sections
// are, in order:
//
//	args          optional: extra command-line flags, separated by white space
//	script.yaml   the scripted provider's scenario, or instead
//	fake.yaml     the fake provider's scenario, served over loopback HTTP
//	steps         the client's side of the conversation (below)
//	project/...   optional: the files of a project the session runs in
//	transcript    every stdout line, then the exit code (and, with
//	              fake.yaml, the requests the fake received)
//
// steps has one step per line:
//
//	> {json}        write the line to stdin
//	> @raw HEX      write raw bytes (hex) to stdin, for invalid UTF-8
//	> @big N JSON   write JSON padded with an ignored field to exactly N bytes
//	< TYPE          wait until the next unread stdout line of that type
//	advance DUR     wait until something sleeps on the clock, then advance it
//	eof             close stdin
//
// The test runs the case and compares what it printed with the transcript
// section; go test ./cmd/openmax -run TestSessions -update rewrites only
// the transcript sections, leaving every other byte of the archives as it
// was. Every transcript must also pass the stream checker.

const stepTimeout = 10 * time.Second

// sessionsDir holds the session cases.
const sessionsDir = "../../golden/sessions"

var update = flag.Bool("update", false, "rewrite golden transcripts")

func TestSessions(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join(sessionsDir, "*.txtar"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no session cases in %s: %v", sessionsDir, err)
	}
	for _, path := range paths {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".txtar"), func(t *testing.T) {
			transcript, stdin := runSession(t, path, nil)
			checkTranscript(t, transcript, stdin)
			if err := golden.Section(path, "transcript", "got", transcript, *update); err != nil {
				t.Error(err)
			}
		})
	}
}

// sessionPath is the archive of the session case name.
func sessionPath(name string) string { return filepath.Join(sessionsDir, name+".txtar") }

// sessionCase is a session archive split into its sections.
type sessionCase struct {
	args       []byte // nil when the case has no args section
	scenario   string // "script.yaml" or "fake.yaml"
	script     []byte // the scenario's text
	steps      []byte
	project    map[string][]byte // path inside the project → content; nil without one
	transcript []byte            // nil when the case has none yet
}

// loadCase reads the session archive at path, failing t on a section it
// does not know, a missing steps section, or not exactly one scenario. A
// new case may have no transcript yet: -update appends it.
func loadCase(t *testing.T, path string) sessionCase {
	t.Helper()
	a, err := txtar.ParseFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var c sessionCase
	seen := map[string]bool{}
	for _, f := range a.Files {
		if seen[f.Name] {
			t.Fatalf("%s: section %s appears twice", path, f.Name)
		}
		seen[f.Name] = true
		switch name := f.Name; {
		case name == "args":
			c.args = f.Data
		case name == "script.yaml" || name == "fake.yaml":
			if c.scenario != "" {
				t.Fatalf("%s: both %s and %s; a case has one scenario", path, c.scenario, name)
			}
			c.scenario, c.script = name, f.Data
		case name == "steps":
			c.steps = f.Data
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
	if !seen["steps"] {
		t.Fatalf("%s: no steps section", path)
	}
	if c.scenario == "" {
		t.Fatalf("%s: no script.yaml or fake.yaml section", path)
	}
	return c
}

// blockTool waits on the session clock for an hour (the test advances it)
// or until the turn is cancelled.
func blockTool(c clock.Clock) tool.Tool {
	return tool.Func{
		ToolSpec: provider.ToolSpec{Name: "block", Description: "waits an hour", Schema: json.RawMessage(`{"type":"object"}`)},
		Fn: func(ctx context.Context, _ json.RawMessage) tool.Result {
			if err := clock.Sleep(ctx, c, time.Hour); err != nil {
				return tool.Failed("interrupted: %v", err)
			}
			return tool.Result{OK: true, Output: "waited an hour"}
		},
	}
}

// echoArgsTool returns its arguments.
func echoArgsTool() tool.Tool {
	return tool.Func{
		ToolSpec: provider.ToolSpec{Name: "echo_args", Description: "returns its arguments", Schema: json.RawMessage(`{"type":"object"}`)},
		Fn: func(_ context.Context, args json.RawMessage) tool.Result {
			return tool.Result{OK: true, Output: string(args)}
		},
	}
}

// touchTool is a mutating tool: in ask mode it waits for approval.
type touchTool struct{}

func (touchTool) Spec() provider.ToolSpec {
	return provider.ToolSpec{Name: "touch", Description: "changes the project", Schema: json.RawMessage(`{"type":"object"}`)}
}
func (touchTool) Run(context.Context, json.RawMessage) tool.Result {
	return tool.Result{OK: true, Output: "touched"}
}
func (touchTool) Mutating() bool { return true }

// panicTool crashes.
func panicTool() tool.Tool {
	return tool.Func{
		ToolSpec: provider.ToolSpec{Name: "crash", Description: "panics", Schema: json.RawMessage(`{"type":"object"}`)},
		Fn:       func(context.Context, json.RawMessage) tool.Result { panic("tool bug") },
	}
}

type session struct {
	t      *testing.T
	stdin  *io.PipeWriter
	sent   bytes.Buffer // everything written to stdin
	lines  chan string
	got    []string
	clock  *clock.Fake
	result chan int
	// untimed: only the context bounds a wait for a line (a test that
	// runs many sessions at once on a loaded machine).
	untimed bool
}

// runSession plays the session case in the archive at path; prefix goes
// before the harness flags (for `record --cassette FILE`).
func runSession(t *testing.T, path string, prefix []string) (transcript, stdin []byte) {
	t.Helper()
	c := loadCase(t, path)
	fake := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	// A case with project/ files runs in a fresh folder holding them (its
	// built-in tools touch real files); its path is the one thing
	// normalised.
	project := "/"
	var hooks caseHooks // {{HOOKPROG}} and {{STATE}} in project files (hooks_session_test.go)
	if c.project != nil {
		project = t.TempDir()
		for name, data := range c.project {
			p := filepath.Join(project, filepath.FromSlash(name))
			if err := os.MkdirAll(filepath.Dir(p), 0o777); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, hooks.expand(t, data), 0o666); err != nil {
				t.Fatal(err)
			}
		}
	}
	// The scenario goes to a file of its own, outside the project.
	scenario := filepath.Join(t.TempDir(), c.scenario)
	if err := os.WriteFile(scenario, c.script, 0o644); err != nil {
		t.Fatal(err)
	}
	args := append(append([]string(nil), prefix...), "--stdio", "--session-id", "s1", "--project", project)
	var server *fakeprovider.Server
	var base string
	if c.scenario == "fake.yaml" {
		// The provider is the fake one, over real loopback HTTP.
		sc, err := script.Load(scenario)
		if err != nil {
			t.Fatal(err)
		}
		server = fakeprovider.New(sc, fakeprovider.Options{Clock: fake})
		base, err = server.Start("127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer server.Close()
		args = append(args, "--provider", "openai", "--base-url", base+"/v1", "--idle-timeout", "0")
	} else {
		args = append(args, "--provider", "script", "--script", scenario)
	}
	for _, a := range strings.Fields(string(c.args)) {
		if server != nil {
			a = strings.ReplaceAll(a, "{{BASE}}", base)
		}
		a = strings.ReplaceAll(a, "{{CLOSED}}", closedURL(t))
		args = append(args, a)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	s := &session{t: t, stdin: inW, lines: make(chan string, 1024), clock: fake, result: make(chan int, 1)}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var stderr bytes.Buffer
	go func() {
		code := run(ctx, args, inR, outW, &stderr, env{clock: fake, tools: []tool.Tool{blockTool(fake), echoArgsTool(), panicTool(), touchTool{}}, getenv: trustedEnv(t, testEnv, project)})
		outW.Close()
		s.result <- code
	}()
	go func() {
		sc := bufio.NewScanner(outR)
		sc.Buffer(nil, 64<<20)
		for sc.Scan() {
			s.lines <- sc.Text()
		}
		close(s.lines)
	}()
	for i, step := range strings.Split(strings.TrimSpace(string(c.steps)), "\n") {
		if err := s.step(ctx, strings.TrimRight(step, "\r")); err != nil {
			t.Fatalf("step %d %q: %v\nstdout so far:\n%s\nstderr:\n%s", i+1, step, err, strings.Join(s.got, "\n"), stderr.String())
		}
	}
	got, err := s.end(ctx)
	if err != nil {
		t.Fatal(err)
	}
	out := bytes.NewBuffer(got)
	if server != nil {
		// What the fake provider received, so a golden shows whether an
		// attempt went out (a cancel during a backoff wait must stop it).
		for _, r := range server.Requests() {
			fmt.Fprintf(out, "request: %s %s\n", r.Method, r.Path)
		}
	}
	// Loopback ports vary from run to run; nothing else is normalised.
	normalised := loopbackPort.ReplaceAll(out.Bytes(), []byte("127.0.0.1:PORT"))
	normalised = hooks.normalise(normalised)
	if project != "/" {
		normalised = bytes.ReplaceAll(normalised, []byte(project), []byte("$PROJECT"))
	}
	out.Reset()
	out.Write(normalised)
	for _, key := range []string{testOpenAIKey, testAnthropicKey, testAWSSecret, testGeminiKey} {
		if bytes.Contains(out.Bytes(), []byte(key)) || strings.Contains(stderr.String(), key) {
			t.Errorf("the API key leaked into the transcript or stderr")
		}
	}
	return out.Bytes(), s.sent.Bytes()
}

const (
	testOpenAIKey    = "sk-test-openai-secret-0123456789"
	testAnthropicKey = "sk-ant-test-secret-0123456789"
	testAWSKeyID     = "AKIDOPENMAXTEST0001"
	testAWSSecret    = "aws-test-secret-0123456789"
	testGeminiKey    = "gemini-test-secret-0123456789"
)

var loopbackPort = regexp.MustCompile(`127\.0\.0\.1:\d+`)

// trustedEnv extends base with a fresh config directory in which projects
// are trusted (each session gets its own, so a saved approval mode never
// leaks into another test).
func trustedEnv(t *testing.T, base func(string) string, projects ...string) func(string) string {
	t.Helper()
	home := t.TempDir()
	p, err := config.Open(filepath.Join(home, "openmax"))
	if err != nil {
		t.Fatal(err)
	}
	for _, pr := range projects {
		if err := p.Trust(pr); err != nil {
			t.Fatal(err)
		}
	}
	return func(k string) string {
		if k == "XDG_CONFIG_HOME" {
			return home
		}
		return base(k)
	}
}

func testEnv(k string) string {
	switch k {
	case "OPENAI_API_KEY":
		return testOpenAIKey
	case "ANTHROPIC_API_KEY":
		return testAnthropicKey
	case "AWS_ACCESS_KEY_ID":
		return testAWSKeyID
	case "AWS_SECRET_ACCESS_KEY":
		return testAWSSecret
	case "GEMINI_API_KEY":
		return testGeminiKey
	}
	return ""
}

// closedURL returns a loopback URL nothing listens on, so connecting is
// refused.
func closedURL(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr + "/v1"
}

// end closes stdin, waits for openmax to exit, and returns every stdout
// line followed by "exit: CODE".
func (s *session) end(ctx context.Context) ([]byte, error) {
	s.stdin.Close()
	var code int
	select {
	case code = <-s.result:
	case <-ctx.Done():
		return nil, fmt.Errorf("openmax did not exit after stdin closed\nstdout:\n%s", strings.Join(s.got, "\n"))
	}
	for line := range s.lines {
		s.got = append(s.got, line)
	}
	var out bytes.Buffer
	for _, l := range s.got {
		out.WriteString(l)
		out.WriteByte('\n')
	}
	fmt.Fprintf(&out, "exit: %d\n", code)
	return out.Bytes(), nil
}

func (s *session) step(ctx context.Context, step string) error {
	verb, arg, _ := strings.Cut(step, " ")
	switch verb {
	case "", "#":
		return nil
	case ">":
		return s.send(arg)
	case "<":
		return s.waitFor(ctx, strings.TrimSpace(arg))
	case "advance":
		d, err := time.ParseDuration(strings.TrimSpace(arg))
		if err != nil {
			return err
		}
		if err := s.clock.BlockUntil(ctx, 1); err != nil {
			return fmt.Errorf("nothing waited on the clock: %w", err)
		}
		s.clock.Advance(d)
		return nil
	case "eof":
		return s.stdin.Close()
	}
	return fmt.Errorf("unknown step verb %q", verb)
}

func (s *session) send(arg string) error {
	var data []byte
	switch {
	case strings.HasPrefix(arg, "@raw "):
		if _, err := fmt.Sscanf(strings.TrimPrefix(arg, "@raw "), "%x", &data); err != nil {
			return err
		}
	case strings.HasPrefix(arg, "@big "):
		var n int
		rest := strings.TrimPrefix(arg, "@big ")
		if _, err := fmt.Sscanf(rest, "%d", &n); err != nil {
			return err
		}
		js := strings.TrimSpace(rest[strings.IndexByte(rest, ' '):])
		data = padJSON(js, n)
	default:
		data = []byte(arg)
	}
	data = append(data, '\n')
	s.sent.Write(data)
	_, err := s.stdin.Write(data)
	return err
}

// padJSON returns the object js with an extra "pad" field making it exactly
// n bytes long.
func padJSON(js string, n int) []byte {
	prefix := strings.TrimSuffix(js, "}") + `,"pad":"`
	const suffix = `"}`
	fill := n - len(prefix) - len(suffix)
	if fill < 0 {
		fill = 0
	}
	return []byte(prefix + strings.Repeat("x", fill) + suffix)
}

func (s *session) waitFor(ctx context.Context, typ string) error {
	timer := time.NewTimer(stepTimeout)
	defer timer.Stop()
	if s.untimed {
		timer.Stop()
	}
	for {
		select {
		case line, ok := <-s.lines:
			if !ok {
				return fmt.Errorf("stdout closed before a %s line", typ)
			}
			s.got = append(s.got, line)
			var head struct{ Type string }
			if err := json.Unmarshal([]byte(line), &head); err != nil {
				return fmt.Errorf("stdout line is not JSON: %q", line)
			}
			if head.Type == typ {
				return nil
			}
		case <-timer.C:
			return fmt.Errorf("no %s line within %v", typ, stepTimeout)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// checkTranscript runs the stream checker over a transcript, with the
// client's stdin for the done accounting.
func checkTranscript(t *testing.T, transcript, stdin []byte) {
	t.Helper()
	body := transcript[:bytes.LastIndex(transcript, []byte("\nexit:"))+1]
	c := wire.NewChecker(wire.Strict())
	c.SetInput(stdin)
	_, err := c.Stream(bytes.NewReader(body), func(v wire.Verdict) {
		if v.Err != nil {
			t.Errorf("checker: line %d: %v", v.Line, v.Err)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
}
