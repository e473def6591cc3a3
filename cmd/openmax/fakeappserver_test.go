package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// A transcript of the real codex 0.169.0: initialize, a thread, a turn that
// calls a dynamic tool (item/tool/call answered by the client).
var codexToolTranscript = filepath.Join("..", "..", "replay", "appserver", "testdata", "codex-tool-ns.jsonl")

const codexToolCwd = "/tmp/h/codex-research/runs/tool_ns/work"

// transcriptStep is one transcript line from the client's side.
type transcriptStep struct {
	send bool
	line string // the line as it crossed
}

// readTranscript reads a transcript's lines as a client of another run
// would send and receive them: request ids +1000 (as strings) and cwd
// swapped for its own.
func readTranscript(t *testing.T, path, cwd string) []transcriptStep {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	idRe := regexp.MustCompile(`^\{"id":([0-9]+),"(method|result|error)"`)
	var steps []transcriptStep
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var tl struct {
			Dir string          `json:"dir"`
			Msg json.RawMessage `json:"msg"`
		}
		if err := json.Unmarshal([]byte(l), &tl); err != nil {
			t.Fatal(err)
		}
		line := string(tl.Msg)
		var s string
		if json.Unmarshal(tl.Msg, &s) == nil {
			line = s
		}
		// Client requests and the responses to them: ids "c1001"...; a
		// server request (recv with a method) and its answer keep theirs.
		if m := idRe.FindStringSubmatch(line); m != nil && (tl.Dir == "send") == (m[2] == "method") {
			line = fmt.Sprintf(`{"id":"c%s",`, "100"+m[1]) + line[len(m[0])-len(m[2])-2:]
		}
		line = strings.ReplaceAll(line, `"`+codexToolCwd, `"`+cwd)
		steps = append(steps, transcriptStep{send: tl.Dir == "send", line: line})
	}
	return steps
}

// startFakeAppServer runs the real binary as a codex client would.
func startFakeAppServer(t *testing.T, ctx context.Context, transcript string, extra ...string) (*exec.Cmd, *os.File, *bufio.Reader, *bytes.Buffer) {
	t.Helper()
	bin := buildBinary(t)
	args := append([]string{"fake-app-server", "--transcript", transcript}, extra...)
	args = append(args, "app-server", "-c", "check_for_update_on_startup=false")
	cmd := exec.CommandContext(ctx, bin, args...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, stdin.(*os.File), bufio.NewReader(stdout), &stderr
}

// TestFakeAppServerProcess drives the real binary over pipes, as a codex
// client does: it writes each of its lines and reads each reply in turn.
func TestFakeAppServerProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary; skipped in -short mode")
	}
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cwd := t.TempDir()
	steps := readTranscript(t, codexToolTranscript, cwd)

	t.Run("replays", func(t *testing.T) {
		log := filepath.Join(t.TempDir(), "fake.log")
		cmd, stdin, stdout, stderr := startFakeAppServer(t, ctx, codexToolTranscript, "--log", log)
		for i, s := range steps {
			if s.send {
				if _, err := stdin.WriteString(s.line + "\n"); err != nil {
					t.Fatal(err)
				}
				continue
			}
			got, err := stdout.ReadString('\n')
			if err != nil {
				t.Fatalf("step %d: %v (stderr %s)", i, err, stderr)
			}
			if got != s.line+"\n" {
				t.Fatalf("step %d: read\n%s\nwant\n%s", i, got, s.line)
			}
		}
		stdin.Close()
		if err := cmd.Wait(); err != nil || stderr.Len() != 0 {
			t.Fatalf("exit %v, stderr %q", err, stderr)
		}
		trace, err := os.ReadFile(log)
		if err != nil || !strings.Contains(string(trace), "all 32 lines replayed") || !strings.Contains(string(trace), "client line 5 matched line 21 (send response to id 0)") {
			t.Errorf("log %v:\n%s", err, trace)
		}
	})

	t.Run("a miss", func(t *testing.T) {
		cmd, stdin, stdout, stderr := startFakeAppServer(t, ctx, codexToolTranscript)
		first := strings.Replace(steps[0].line, `"experimentalApi":true`, `"experimentalApi":false`, 1)
		if _, err := stdin.WriteString(first + "\n"); err != nil {
			t.Fatal(err)
		}
		got, err := stdout.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		var answer struct {
			ID    string `json:"id"`
			Error struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal([]byte(got), &answer); err != nil || answer.ID != "c1001" || answer.Error.Code != -32001 ||
			!strings.Contains(answer.Error.Message, `-      "experimentalApi": true`) || !strings.Contains(answer.Error.Message, `+      "experimentalApi": false`) {
			t.Errorf("answer %s (%v)", got, err)
		}
		stdin.Close()
		if rest, err := io.ReadAll(stdout); err != nil || len(rest) != 0 {
			t.Errorf("more on stdout: %q (%v)", rest, err)
		}
		err = cmd.Wait()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
			t.Errorf("exit %v, want 1", err)
		}
		if !strings.Contains(stderr.String(), "does not match transcript line 1") || !strings.Contains(stderr.String(), `+      "experimentalApi": false`) {
			t.Errorf("stderr %s", stderr)
		}
	})

	t.Run("the client stops early", func(t *testing.T) {
		cmd, stdin, stdout, stderr := startFakeAppServer(t, ctx, codexToolTranscript)
		if _, err := stdin.WriteString(steps[0].line + "\n"); err != nil {
			t.Fatal(err)
		}
		if got, err := stdout.ReadString('\n'); err != nil || got != steps[1].line+"\n" {
			t.Fatalf("read %q, %v", got, err)
		}
		stdin.Close()
		err := cmd.Wait()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
			t.Errorf("exit %v, want 1", err)
		}
		if !strings.Contains(stderr.String(), "the client closed its stdin with 30 transcript lines not replayed (4 of them its own)") {
			t.Errorf("stderr %s", stderr)
		}
	})
}

// TestFakeAppServerCommand: the command's arguments and exit codes, in
// process.
func TestFakeAppServerCommand(t *testing.T) {
	steps := readTranscript(t, codexToolTranscript, "/tmp/elsewhere")
	var client, replies []string
	for _, s := range steps {
		if s.send {
			client = append(client, s.line)
		} else {
			replies = append(replies, s.line)
		}
	}
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.jsonl")
	if err := os.WriteFile(bad, []byte(`{"dir":"send","msg":{"id":1,"method":"initialize"}}`+"\n"+`{"dir":"sideways","msg":{}}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	existing := filepath.Join(dir, "existing.log")
	if err := os.WriteFile(existing, []byte("an earlier log\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	replaced := filepath.Join(dir, "replaced.log")
	if err := os.WriteFile(replaced, []byte("an earlier log\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name   string
		args   []string
		stdin  string
		code   int
		stdout string // exactly; "-" for "starts with usage:"
		stderr string // contained in stderr
	}{
		{"help", []string{"--help"}, "", 0, "-", ""},
		{"an existing log is kept", []string{"--transcript", codexToolTranscript, "--log", existing}, "", 2, "", "existing.log already exists (write to a new file, or pass --overwrite to replace it)"},
		{"the log is the transcript", []string{"--transcript", codexToolTranscript, "--log", codexToolTranscript, "--overwrite"}, "", 2, "", "is the input"},
		{"--overwrite without --log", []string{"--transcript", codexToolTranscript, "--overwrite"}, "", 2, "", "--overwrite is for --log FILE"},
		{"--overwrite replaces the log", []string{"--transcript", codexToolTranscript, "--log", replaced, "--overwrite"},
			strings.Join(client, "\n") + "\n", 0, strings.Join(replies, "\n") + "\n", ""},
		{"help command", []string{"help"}, "", 0, "-", ""},
		{"replays, codex's arguments ignored", []string{"--transcript", codexToolTranscript, "app-server", "-c", "check_for_update_on_startup=false", "--config=a.b=1", "-c=x=y"},
			strings.Join(client, "\n") + "\n", 0, strings.Join(replies, "\n") + "\n", ""},
		{"the transcript after codex's arguments is codex's", []string{"app-server", "--transcript", codexToolTranscript}, "", 2, "", `codex argument "--transcript" is not -c KEY=VALUE`},
		{"no transcript", []string{"app-server"}, "", 2, "", "give --transcript FILE"},
		{"a codex argument the fake does not know", []string{"--transcript", codexToolTranscript, "app-server", "--listen", "stdio://"}, "", 2, "", `codex argument "--listen"`},
		{"-c without a value", []string{"--transcript", codexToolTranscript, "app-server", "-c"}, "", 2, "", "codex argument -c has no KEY=VALUE"},
		{"-c without a key", []string{"--transcript", codexToolTranscript, "app-server", "-c", "novalue"}, "", 2, "", `codex argument -c "novalue" is not KEY=VALUE`},
		{"an argument of ours", []string{"--transcript", codexToolTranscript, "extra"}, "", 2, "", `unexpected argument "extra"`},
		{"a bad transcript", []string{"--transcript", bad}, "", 1, "", "bad.jsonl: transcript line 2: dir is \"sideways\""},
		{"a missing transcript", []string{"--transcript", filepath.Join(dir, "none.jsonl")}, "", 1, "", "no such file"},
		{"a log that cannot be written", []string{"--transcript", codexToolTranscript, "--log", filepath.Join(dir, "no", "log")}, "", 1, "", "no such file"},
		{"a leftover", []string{"--transcript", codexToolTranscript}, client[0] + "\n", 1, replies[0] + "\n", "30 transcript lines not replayed"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"fake-app-server"}, tt.args...)
			if tt.name == "help command" {
				args = []string{"help", "fake-app-server"}
			}
			stdout, stderr, code := runCLI(t, tt.stdin, args...)
			if code != tt.code || !strings.Contains(stderr, tt.stderr) || (tt.stderr == "") != (stderr == "") {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, stderr, tt.code, tt.stderr)
			}
			if tt.stdout == "-" {
				if !strings.HasPrefix(stdout, "usage: openmax fake-app-server --transcript FILE") || !strings.Contains(stdout, "-log") {
					t.Errorf("help %q", stdout)
				}
			} else if stdout != tt.stdout {
				t.Errorf("stdout\n%s\nwant\n%s", stdout, tt.stdout)
			}
		})
	}
	if got, err := os.ReadFile(existing); err != nil || string(got) != "an earlier log\n" {
		t.Errorf("a refused --log was touched: %q, %v", got, err)
	}
	if got, err := os.ReadFile(replaced); err != nil || strings.Contains(string(got), "an earlier log") || !strings.Contains(string(got), "lines replayed\n") {
		t.Errorf("--overwrite did not replace the log: %q, %v", got, err)
	}
}
