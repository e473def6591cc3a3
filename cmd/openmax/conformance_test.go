package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openmax/openmax/core/config"
	"github.com/openmax/openmax/core/wire"
	"github.com/openmax/openmax/provider/clock"
)

// This file holds the tests docs/conformance.md names for clauses of
// stdio-protocol.md that no other test asserted through the binary's own
// entry point (run).

// TestContinueOwnershipAndReadability: "A continued session must have a
// readable session index and transcript and no other writable owner.
// Failure is reported on stderr with a nonzero exit before the handshake.
// The process retains ownership while waiting for commands, including
// between turns." (stdio-protocol.md, Handshake; HS-11 and HS-13 in
// docs/conformance.md).
func TestContinueOwnershipAndReadability(t *testing.T) {
	state, project := t.TempDir(), t.TempDir()
	e := env{clock: clock.Real{}, getenv: trustedEnv(t, func(k string) string {
		if k == "XDG_STATE_HOME" {
			return state
		}
		return ""
	}, project)}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	args := []string{"--stdio", "--provider", "echo", "--project", project}
	continueOnce := func() (string, string, int) {
		var out, errb bytes.Buffer
		code := run(ctx, append(args, "--continue"), strings.NewReader(""), &out, &errb, e)
		return out.String(), errb.String(), code
	}

	// A live session that has finished a turn and waits for the next
	// command still owns the session.
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	exited := make(chan int, 1)
	go func() {
		exited <- run(ctx, append(args, "--session-id", "s-owner"), inR, outW, io.Discard, e)
		outW.Close()
	}()
	lines := bufio.NewScanner(outR)
	if _, err := inW.Write([]byte(`{"cmd":"user","text":"first turn"}` + "\n")); err != nil {
		t.Fatal(err)
	}
	sawDone := false
	for lines.Scan() {
		if strings.Contains(lines.Text(), `"type":"done"`) {
			sawDone = true
			break
		}
	}
	if !sawDone {
		t.Fatal("the owner's turn printed no done")
	}
	if out, stderr, code := continueOnce(); code == 0 || out != "" || !strings.Contains(stderr, "owned") {
		t.Errorf("--continue between the owner's turns: exit %d, stdout %q, stderr %q; want a nonzero exit, no stdout, and why on stderr", code, out, stderr)
	}
	inW.Close()
	go func() { _, _ = io.Copy(io.Discard, outR) }()
	if code := <-exited; code != 0 {
		t.Fatalf("owner exit %d", code)
	}

	// Once the owner is gone, --continue resumes it.
	if out, stderr, code := continueOnce(); code != 0 || !strings.Contains(out, `"continued":true`) {
		t.Fatalf("--continue after the owner exited: exit %d\n%s%s", code, out, stderr)
	}

	index, transcript := sessionFiles(t, state)
	// The index is index.json, the durable one, and index.next.json beside
	// it, which names the latest session first when it is whole: both are
	// made unreadable.
	next := filepath.Join(filepath.Dir(index), "index.next.json")
	good, err := os.ReadFile(index)
	if err != nil {
		t.Fatal(err)
	}
	goodNext, err := os.ReadFile(next)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		breakIt func() error
		fix     func() error
		names   string // what stderr must name
	}{
		{"unreadable index",
			func() error {
				return errors.Join(os.WriteFile(index, []byte("{latest"), 0o600), os.WriteFile(next, []byte("{latest"), 0o600))
			},
			func() error {
				return errors.Join(os.WriteFile(index, good, 0o600), os.WriteFile(next, goodNext, 0o600))
			},
			index},
		{"unreadable transcript",
			func() error {
				if err := os.Rename(transcript, transcript+".away"); err != nil {
					return err
				}
				return os.Mkdir(transcript, 0o700)
			},
			func() error {
				if err := os.Remove(transcript); err != nil {
					return err
				}
				return os.Rename(transcript+".away", transcript)
			},
			transcript},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.breakIt(); err != nil {
				t.Fatal(err)
			}
			out, stderr, code := continueOnce()
			if code == 0 || out != "" || !strings.Contains(stderr, tt.names) {
				t.Errorf("exit %d, stdout %q, stderr %q; want a nonzero exit before any handshake and stderr naming %s", code, out, stderr, tt.names)
			}
			if err := tt.fix(); err != nil {
				t.Fatal(err)
			}
		})
	}
	// The failures left the session as it was.
	if out, stderr, code := continueOnce(); code != 0 || !strings.Contains(out, "first turn") {
		t.Errorf("--continue after the repairs: exit %d\n%s%s", code, out, stderr)
	}
}

// sessionFiles finds the one session index and the one transcript file
// under a state directory.
func sessionFiles(t *testing.T, state string) (index, transcript string) {
	t.Helper()
	err := filepath.WalkDir(state, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		switch {
		case d.Name() == "index.json":
			index = path
		case strings.Contains(d.Name(), "s-owner"):
			transcript = path
		}
		return nil
	})
	if err != nil || index == "" || transcript == "" {
		var all []string
		_ = filepath.WalkDir(state, func(path string, _ fs.DirEntry, _ error) error { all = append(all, path); return nil })
		t.Fatalf("index %q, transcript %q (%v) under:\n%s", index, transcript, err, strings.Join(all, "\n"))
	}
	return index, transcript
}

// TestCheckerParsesByFieldName: "object key order is not significant:
// parse every line by field name" (stdio-protocol.md, Events; EV-2 in
// docs/conformance.md). openmax's own reader of the wire, the checker
// behind openmax --check --stdio, accepts every golden transcript with the
// keys of each line in reverse order, and still rejects a reordered
// violation.
func TestCheckerParsesByFieldName(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join(sessionsDir, "*.txtar"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no session cases: %v", err)
	}
	check := func(stream []byte) (violations []string) {
		_, err := wire.CheckStreamStrict(bytes.NewReader(stream), func(v wire.Verdict) {
			if v.Err != nil {
				violations = append(violations, v.Err.Error())
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		return violations
	}
	for _, path := range paths {
		tr := loadCase(t, path).transcript
		stream := tr[:bytes.LastIndex(tr, []byte("exit:"))]
		var reversed bytes.Buffer
		for _, line := range bytes.SplitAfter(stream, []byte("\n")) {
			if len(bytes.TrimSpace(line)) == 0 {
				continue
			}
			reversed.Write(reverseKeys(t, bytes.TrimSuffix(line, []byte("\n"))))
			reversed.WriteByte('\n')
		}
		if bytes.Equal(reversed.Bytes(), stream) {
			t.Fatalf("%s: reversing the keys changed nothing", path)
		}
		if v := check(reversed.Bytes()); len(v) > 0 {
			t.Errorf("%s with its keys reversed: %s", filepath.Base(path), strings.Join(v, "; "))
		}
	}
	hello := reverseKeys(t, []byte(`{"type":"hello","proto":"openmax-stdio/6","protocol_version":6,"session_id":"s","version":"x","project":"/","continued":false}`))
	stray := string(hello) + "\n" + string(reverseKeys(t, []byte(`{"session_id":"s","type":"done","stop_reason":"stop"}`))) + "\n"
	if v := check([]byte(stray)); len(v) != 1 || !strings.Contains(v[0], "done with no turn open") {
		t.Errorf("a done with no turn open, keys reversed: violations %q, want that one", v)
	}
}

// reverseKeys re-encodes a JSON object line with its top-level keys in
// reverse order, each value's bytes as they were.
func reverseKeys(t *testing.T, line []byte) []byte {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(line))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("not an object: %s", line)
	}
	type kv struct {
		k string
		v json.RawMessage
	}
	var kvs []kv
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		kvs = append(kvs, kv{tok.(string), v})
	}
	var b bytes.Buffer
	b.WriteByte('{')
	for i := len(kvs) - 1; i >= 0; i-- {
		k, _ := json.Marshal(kvs[i].k)
		b.Write(k)
		b.WriteByte(':')
		b.Write(kvs[i].v)
		if i > 0 {
			b.WriteByte(',')
		}
	}
	b.WriteByte('}')
	return b.Bytes()
}

// TestApprovalModeSurvivesRestart: the mode "survives restart"
// (stdio-protocol.md, after the event table; AM-2 in docs/conformance.md).
// One process saves it with approval_mode and exits; the next process of
// the same project gates a mutating tool by it, asking nothing: readonly
// refuses the write, auto runs it.
func TestApprovalModeSurvivesRestart(t *testing.T) {
	project := t.TempDir()
	e := env{clock: clock.Real{}, getenv: trustedEnv(t, func(string) string { return "" }, project)}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sc := filepath.Join(t.TempDir(), "s.yaml")
	scenario := "replies:\n  - tool_calls: [{id: c1, name: write_file, args: {path: out.txt, content: \"x\\n\"}}]\n  - text: done\n"
	if err := os.WriteFile(sc, []byte(scenario), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		mode, toolEnd string
		wrote         bool
	}{
		{"readonly", `"call_id":"c1","ok":false`, false},
		{"auto", `"call_id":"c1","ok":true`, true},
	} {
		t.Run(tt.mode, func(t *testing.T) {
			var out bytes.Buffer
			if code := run(ctx, []string{"--stdio", "--provider", "echo", "--project", project},
				strings.NewReader(`{"cmd":"approval_mode","mode":"`+tt.mode+`"}`+"\n"), &out, io.Discard, e); code != 0 ||
				!strings.Contains(out.String(), `{"type":"approval_mode","mode":"`+tt.mode+`"}`) {
				t.Fatalf("saving %s: exit %d\n%s", tt.mode, code, out.String())
			}
			out.Reset()
			if code := run(ctx, []string{"--stdio", "--provider", "script", "--script", sc, "--project", project},
				strings.NewReader(`{"cmd":"user","text":"write it"}`+"\n"), &out, io.Discard, e); code != 0 {
				t.Fatalf("exit %d\n%s", code, out.String())
			}
			got := out.String()
			if !strings.Contains(got, tt.toolEnd) || strings.Contains(got, `"type":"approval_request"`) {
				t.Errorf("the restarted process in %s: want %s and no approval_request:\n%s", tt.mode, tt.toolEnd, got)
			}
			_, err := os.Stat(filepath.Join(project, "out.txt"))
			if wrote := err == nil; wrote != tt.wrote {
				t.Errorf("out.txt written: %v, want %v", wrote, tt.wrote)
			}
		})
	}
}

// TestApprovalModeAckedAfterSave: "A successful approval_mode command is
// acknowledged with {"type":"approval_mode","mode":"..."} after the
// setting is persisted" (stdio-protocol.md; AP-5 in docs/conformance.md).
// The moment the acknowledgement is read, with the process still running,
// the settings file on disk already holds the mode.
func TestApprovalModeAckedAfterSave(t *testing.T) {
	project := t.TempDir()
	getenv := trustedEnv(t, func(string) string { return "" }, project)
	e := env{clock: clock.Real{}, getenv: getenv}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	exited := make(chan int, 1)
	go func() {
		exited <- run(ctx, []string{"--stdio", "--provider", "echo", "--project", project}, inR, outW, io.Discard, e)
		outW.Close()
	}()
	lines := bufio.NewScanner(outR)
	for _, mode := range []string{"readonly", "auto", "ask"} {
		if _, err := inW.Write([]byte(`{"cmd":"approval_mode","mode":"` + mode + `"}` + "\n")); err != nil {
			t.Fatal(err)
		}
		acked := false
		for !acked && lines.Scan() {
			acked = lines.Text() == `{"type":"approval_mode","mode":"`+mode+`"}`
		}
		if !acked {
			t.Fatalf("no acknowledgement of %s", mode)
		}
		p, err := config.Open(filepath.Join(getenv("XDG_CONFIG_HOME"), "openmax"))
		if err != nil {
			t.Fatal(err)
		}
		if got := p.Mode(project); got != mode {
			t.Errorf("acknowledged %s while the saved mode is %q", mode, got)
		}
	}
	inW.Close()
	go func() { _, _ = io.Copy(io.Discard, outR) }()
	if code := <-exited; code != 0 {
		t.Errorf("exit %d", code)
	}
}

// TestHelloProjectIsAbsolute: hello's project is "/abs/path"
// (stdio-protocol.md, Handshake; HS-1 in docs/conformance.md): a relative
// --project, and none at all (the working directory), both come out as the
// absolute directory.
func TestHelloProjectIsAbsolute(t *testing.T) {
	parent := t.TempDir()
	project := filepath.Join(parent, "proj")
	if err := os.Mkdir(project, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(parent)
	e := env{clock: clock.Real{}, getenv: trustedEnv(t, func(string) string { return "" })}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"relative --project", []string{"--project", "proj"}, project},
		{"relative with dots", []string{"--project", "./proj/../proj"}, project},
		{"no --project", nil, parent},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			if code := run(ctx, append([]string{"--stdio", "--provider", "echo"}, tt.args...), strings.NewReader(""), &out, io.Discard, e); code != 0 {
				t.Fatalf("exit %d\n%s", code, out.String())
			}
			first, _, _ := strings.Cut(out.String(), "\n")
			var hello struct {
				Type, Project string
			}
			if err := json.Unmarshal([]byte(first), &hello); err != nil || hello.Type != "hello" {
				t.Fatalf("first line %q: %v", first, err)
			}
			if hello.Project != tt.want || !filepath.IsAbs(hello.Project) {
				t.Errorf("hello project %q, want %q", hello.Project, tt.want)
			}
		})
	}
}
