package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/openmax/openmax/core/store"
	"github.com/openmax/openmax/core/wire"
	"github.com/openmax/openmax/provider"
)

// longChunks are the text chunks of a reply long enough to be written to
// the session file while it streams (core's streamChunk is 64 KiB): some
// 300 KB, with characters the encoding escapes.
func longChunks(tag string) []string {
	var c []string
	for i := range 20000 {
		c = append(c, fmt.Sprintf("%s%05d <é\"\n\t> ", tag, i))
	}
	return append(c, "€ \u2028 end")
}

// scenarioOf writes a script scenario of replies, each a list of text
// chunks then finish stop, or then a stall when the reply's name says so.
func scenarioOf(t *testing.T, replies ...[]string) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("replies:\n")
	for _, r := range replies {
		b.WriteString("  - chunks:\n")
		stall := false
		for _, c := range r {
			if c == "\x00stall" {
				stall = true
				continue
			}
			q, _ := json.Marshal(c)
			fmt.Fprintf(&b, "      - text: %s\n", q)
		}
		if stall {
			b.WriteString("      - stall: true\n")
		} else {
			b.WriteString("      - finish: stop\n")
		}
	}
	path := filepath.Join(t.TempDir(), "s.yaml")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// sessionOnDisk loads the project's latest session as --continue does.
func sessionOnDisk(t *testing.T, state, project string) (string, []provider.Message) {
	t.Helper()
	st, err := store.Open(filepath.Join(state, "openmax"), project)
	if err != nil {
		t.Fatal(err)
	}
	id, err := st.Latest()
	if err != nil {
		t.Fatal(err)
	}
	w, msgs, err := st.Continue(id)
	if err != nil {
		t.Fatalf("loading the session: %v", err)
	}
	path := w.Path()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return path, msgs
}

// wantMessages compares a session's messages with the roles and texts
// expected.
func wantMessages(t *testing.T, got []provider.Message, want ...provider.Message) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("the session holds %d messages, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i].Role != want[i].Role || got[i].Text != want[i].Text {
			t.Fatalf("message %d: %s of %d bytes (%.60q...), want %s of %d bytes (%.60q...)", i,
				got[i].Role, len(got[i].Text), got[i].Text, want[i].Role, len(want[i].Text), want[i].Text)
		}
	}
}

// continued runs --continue with no input and returns its transcript line.
func continued(t *testing.T, ctx context.Context, bin string, env []string, args ...string) wire.Transcript {
	t.Helper()
	cmd := exec.CommandContext(ctx, bin, append(args, "--continue")...)
	cmd.Env = env
	cmd.Stdin = strings.NewReader("")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("--continue: %v\n%s", err, out)
	}
	lines := strings.SplitN(string(out), "\n", 3)
	var tx wire.Transcript
	if len(lines) < 2 || json.Unmarshal([]byte(lines[1]), &tx) != nil || !strings.Contains(lines[1], `"type":"transcript"`) {
		t.Fatalf("--continue printed %q", out)
	}
	return tx
}

// streamSaveSetup builds the binary and gives it a trusted project and a
// state directory of its own.
func streamSaveSetup(t *testing.T) (bin, project, state string, ctx context.Context, env []string) {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin = buildBinary(t)
	project, state = t.TempDir(), t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return bin, project, state, ctx, trustedBinaryEnv(t, ctx, bin, project, state)
}

// TestStreamedReplySavedAndResumed: through the binary, a reply long
// enough to be written to the session file while it streams is there, one
// record, whole and exact, when message_done carries it; it loads back
// identical, and --continue resumes the session with it.
func TestStreamedReplySavedAndResumed(t *testing.T) {
	bin, project, state, ctx, env := streamSaveSetup(t)
	chunks := longChunks("w")
	full := strings.Join(chunks, "")
	args := []string{"--stdio", "--provider", "script", "--script", scenarioOf(t, chunks), "--project", project}

	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = env
	cmd.Stdin = strings.NewReader(`{"cmd":"user","text":"write a lot"}` + "\n")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	var tokens strings.Builder
	var done wire.MessageDone
	for _, l := range strings.Split(strings.TrimSuffix(string(out), "\n"), "\n") {
		switch {
		case strings.Contains(l, `"type":"token"`):
			var tok wire.Token
			json.Unmarshal([]byte(l), &tok)
			tokens.WriteString(tok.Text)
		case strings.Contains(l, `"type":"message_done"`):
			if err := json.Unmarshal([]byte(l), &done); err != nil {
				t.Fatalf("message_done: %v", err)
			}
		}
	}
	if tokens.String() != full || done.Text != full {
		t.Fatalf("tokens carry %d bytes and message_done %d, want %d", tokens.Len(), len(done.Text), len(full))
	}
	if _, err := wire.CheckStreamStrict(bytes.NewReader(out), func(v wire.Verdict) {
		if v.Err != nil {
			t.Errorf("stdout line %d: %v", v.Line, v.Err)
		}
	}); err != nil {
		t.Fatal(err)
	}

	path, msgs := sessionOnDisk(t, state, project)
	wantMessages(t, msgs,
		provider.Message{Role: provider.RoleUser, Text: "write a lot"},
		provider.Message{Role: provider.RoleAssistant, Text: full})
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(data, []byte("\n")); n != 2 || !bytes.HasSuffix(data, []byte("\n")) {
		t.Fatalf("the session file holds %d lines, want 2 records", n)
	}

	tx := continued(t, ctx, bin, env, args...)
	if len(tx.Messages) != 2 || tx.Messages[1].Role != "assistant" || !strings.HasPrefix(full, tx.Messages[1].Content) || !tx.Truncated {
		t.Fatalf("--continue transcript: %d messages, %+v", len(tx.Messages), tx.Messages)
	}
}

// TestKillMidStreamKeepsEarlierMessages: SIGKILL while a long reply is
// being written to the session file: the file then holds the earlier
// records and the reply's partial record as a torn last line; --continue
// resumes with every earlier message intact and the partial reply gone.
func TestKillMidStreamKeepsEarlierMessages(t *testing.T) {
	bin, project, state, ctx, env := streamSaveSetup(t)
	first, second := longChunks("a"), longChunks("b")
	args := []string{"--stdio", "--provider", "script", "--script", scenarioOf(t, first, append(second, "\x00stall")), "--project", project}

	l := startLive(t, ctx, bin, env, args...)
	l.send(`{"cmd":"user","text":"first"}`)
	l.until(ctx, `"type":"done"`)
	l.send(`{"cmd":"user","text":"second"}`)
	// Every token of the second reply is out (its last chunk ends "\u2028
	// end"); it stalls now.
	l.until(ctx, `"text":"b19999 `)
	l.until(ctx, `\u2028 end"`)

	earlier := []provider.Message{
		{Role: provider.RoleUser, Text: "first"},
		{Role: provider.RoleAssistant, Text: strings.Join(first, "")},
		{Role: provider.RoleUser, Text: "second"},
	}
	files, _ := filepath.Glob(filepath.Join(state, "openmax", "projects", "*", "sessions", "*.jsonl"))
	if len(files) != 1 {
		t.Fatalf("session files %v", files)
	}
	// The partial reply is on the file already, no waiting on the clock:
	// each 64 KiB piece is written before the next token line goes out,
	// and every token is out, the last piece boundary well before them.
	data, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	good := bytes.LastIndexByte(data, '\n') + 1
	if bytes.Count(data, []byte("\n")) != len(earlier) || len(data)-good < 64<<10 {
		t.Fatalf("before the kill the file holds %d lines and %d bytes after them, want %d records and the streaming reply's first 64 KiB pieces",
			bytes.Count(data, []byte("\n")), len(data)-good, len(earlier))
	}
	if err := l.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	l.cmd.Wait()

	_, msgs := sessionOnDisk(t, state, project)
	wantMessages(t, msgs, earlier...)
	tx := continued(t, ctx, bin, env, args...)
	if len(tx.Messages) != 3 || tx.Messages[2].Content != "second" {
		t.Fatalf("--continue transcript after the kill: %+v", tx.Messages)
	}
}
