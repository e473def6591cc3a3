package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/openmax/openmax/core/wire"
	"github.com/openmax/openmax/provider/clock"
)

// liveRun is `openmax --stdio` run in process over pipes, so a test can
// change the project's files between commands.
type liveRun struct {
	t     *testing.T
	in    *io.PipeWriter
	out   *bufio.Scanner
	lines []string
	code  chan int
}

func startRun(t *testing.T, getenv func(string) string, args ...string) *liveRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	r := &liveRun{t: t, in: inW, out: bufio.NewScanner(outR), code: make(chan int, 1)}
	r.out.Buffer(nil, 1<<20)
	go func() {
		code := run(ctx, args, inR, outW, io.Discard, env{clock: clock.Real{}, getenv: getenv})
		outW.Close()
		r.code <- code
	}()
	r.next() // hello
	return r
}

// next reads one stdout line, decoded.
func (r *liveRun) next() map[string]any {
	r.t.Helper()
	if !r.out.Scan() {
		r.t.Fatalf("stdout ended; so far:\n%s", strings.Join(r.lines, "\n"))
	}
	r.lines = append(r.lines, r.out.Text())
	var m map[string]any
	if err := json.Unmarshal(r.out.Bytes(), &m); err != nil {
		r.t.Fatalf("%q: %v", r.out.Text(), err)
	}
	return m
}

// send writes a command and reads stdout up to the first line of type
// until, returning the lines read.
func (r *liveRun) send(cmd, until string) []map[string]any {
	r.t.Helper()
	if _, err := io.WriteString(r.in, cmd+"\n"); err != nil {
		r.t.Fatal(err)
	}
	var got []map[string]any
	for {
		m := r.next()
		got = append(got, m)
		if m["type"] == until {
			return got
		}
	}
}

// finish closes stdin, drains stdout, checks the whole transcript against
// the contract and returns the exit code.
func (r *liveRun) finish() int {
	r.t.Helper()
	r.in.Close()
	for r.out.Scan() {
		r.lines = append(r.lines, r.out.Text())
	}
	if _, err := wire.CheckStreamStrict(strings.NewReader(strings.Join(r.lines, "\n")), func(v wire.Verdict) {
		if v.Err != nil {
			r.t.Errorf("line %d: %v\n%s", v.Line, v.Err, strings.Join(r.lines, "\n"))
		}
	}); err != nil {
		r.t.Fatal(err)
	}
	return <-r.code
}

func strs(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}
	return out
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestReloadRefreezes: reload reads tools, skills and the system prompt
// again: refrozen lists the tools and skills, and changes says what
// changed and which file; the harness note saying so is written into the
// transcript before the next prompt (harness_note with an empty call_id
// after that turn's budget) and is in the saved session; a reload with
// nothing changed has no changes and leaves no note.
func TestReloadRefreezes(t *testing.T) {
	project, state := t.TempDir(), t.TempDir()
	getenv := trustedEnv(t, func(k string) string {
		if k == "XDG_STATE_HOME" {
			return state
		}
		return ""
	}, project)
	writeFile(t, filepath.Join(project, ".openmax/skills/review.md"), "Review diffs line by line.\n")
	sc := filepath.Join(t.TempDir(), "s.yaml")
	writeFile(t, sc, "replies:\n  - text: one\n  - text: two\n")
	args := []string{"--stdio", "--provider", "script", "--script", sc, "--project", project}
	r := startRun(t, getenv, args...)
	builtins := []string{"read_file", "list_files", "search", "write_file", "edit_file", "run_command"}

	first := r.send(`{"cmd":"reload"}`, "refrozen")[0]
	if got := strs(first["tools"]); !slices.Equal(got, builtins) {
		t.Errorf("tools %v", got)
	}
	if got := strs(first["skills"]); !slices.Equal(got, []string{"review"}) {
		t.Errorf("skills %v", got)
	}
	if got := strs(first["changes"]); len(got) != 0 {
		t.Errorf("nothing changed since the start, yet changes %v", got)
	}

	writeFile(t, filepath.Join(project, ".openmax/skills/review.md"), "Review diffs twice.\n")
	writeFile(t, filepath.Join(project, ".openmax/skills/deploy.md"), "Deploy with make deploy.\n")
	writeFile(t, filepath.Join(project, ".openmax/skills/bad name.md"), "x\n")
	writeFile(t, filepath.Join(project, ".openmax/system.md"), "Answer in French.\n")
	writeFile(t, filepath.Join(project, ".openmax/tools/lint.sh"), "#!/bin/sh\necho ok\n")
	writeFile(t, filepath.Join(project, ".openmax/tools/lint.json"), `{"description":"lint the project","code":".openmax/tools/lint.sh","interpreter":["/bin/sh"]}`)
	second := r.send(`{"cmd":"reload"}`, "refrozen")[0]
	if got := strs(second["tools"]); !slices.Equal(got, append(builtins, "lint")) {
		t.Errorf("tools %v", got)
	}
	if got := strs(second["skills"]); !slices.Equal(got, []string{"deploy", "review"}) {
		t.Errorf("skills %v", got)
	}
	changes := strs(second["changes"])
	for _, want := range []string{
		"tool lint: added (.openmax/tools/lint.json)",
		"skill review: changed (.openmax/skills/review.md)",
		"skill deploy: added (.openmax/skills/deploy.md)",
		"system prompt: added (.openmax/system.md)",
		"not loaded: .openmax/skills/bad name.md: a skill's name",
	} {
		if !slices.ContainsFunc(changes, func(c string) bool { return strings.HasPrefix(c, want) }) {
			t.Errorf("changes %q lack %q", changes, want)
		}
	}

	turn := r.send(`{"cmd":"user","text":"hi"}`, "done")
	if len(turn) < 2 || turn[0]["type"] != "budget" || turn[1]["type"] != "harness_note" {
		t.Fatalf("the turn after a reload that changed things does not open with budget, harness_note: %v", turn)
	}
	note := turn[1]
	if note["call_id"] != "" || !strings.Contains(note["text"].(string), "skill deploy: added (.openmax/skills/deploy.md)") {
		t.Errorf("note %v", note)
	}
	if third := r.send(`{"cmd":"reload"}`, "refrozen")[0]; len(strs(third["changes"])) != 1 { // only the bad skill file again
		t.Errorf("a reload with nothing new: changes %v", third["changes"])
	}
	again := r.send(`{"cmd":"user","text":"more"}`, "done")
	for _, m := range again {
		if m["type"] == "harness_note" {
			t.Errorf("a note went out twice: %v", m)
		}
	}
	if code := r.finish(); code != 0 {
		t.Errorf("exit %d", code)
	}

	// The note is in the saved session, just before the prompt it preceded.
	c := startRun(t, getenv, append(args, "--continue")...)
	c.lines = nil
	if !c.out.Scan() {
		t.Fatal("no transcript line")
	}
	var tx struct {
		Messages []struct{ Role, Content string }
	}
	if err := json.Unmarshal(c.out.Bytes(), &tx); err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, m := range tx.Messages {
		texts = append(texts, m.Content)
	}
	i := slices.Index(texts, "hi")
	if i < 1 || !strings.Contains(texts[i-1], "re-frozen") {
		t.Errorf("saved transcript %q: no note before the prompt", texts)
	}
	c.in.Close()
	for c.out.Scan() {
	}
	<-c.code
}

// TestReloadRefreezesSystemPrompt: the project's system file
// (.openmax/system.md) is frozen into the system prompt when the session
// starts. Editing it changes nothing the model receives until reload;
// after reload the next request carries the edited text in the wire's
// place for the system prompt (Chat Completions' system message,
// Anthropic's system field, the Responses instructions) and the old text
// nowhere in its body.
func TestReloadRefreezesSystemPrompt(t *testing.T) {
	const before, after = "Answer in French.", "Answer in Latin."
	for _, w := range vendorWires {
		t.Run(w.name, func(t *testing.T) {
			srv, base := startVendor(t, "replies:\n  - text: one\n  - text: two\n  - text: three\n")
			project := t.TempDir()
			writeFile(t, filepath.Join(project, ".openmax/system.md"), before+"\n")
			r := startRun(t, trustedEnv(t, testEnv, project), append([]string{"--stdio", "--project", project}, w.flags(base)...)...)
			r.send(`{"cmd":"user","text":"one"}`, "done")
			writeFile(t, filepath.Join(project, ".openmax/system.md"), after+"\n")
			r.send(`{"cmd":"user","text":"two"}`, "done")
			if got := strs(r.send(`{"cmd":"reload"}`, "refrozen")[0]["changes"]); !slices.Equal(got, []string{"system prompt: changed (.openmax/system.md)"}) {
				t.Errorf("changes %q", got)
			}
			r.send(`{"cmd":"user","text":"three"}`, "done")
			if code := r.finish(); code != 0 {
				t.Fatalf("exit %d", code)
			}

			raw := srv.Requests()
			if len(raw) != 3 {
				t.Fatalf("%d requests, want 3", len(raw))
			}
			for i, want := range []string{before, before, after} {
				sent := decodeSent(t, w.name, raw[i].Body)
				if sent.System != want {
					t.Errorf("request %d: system prompt %q, want %q", i+1, sent.System, want)
				}
			}
			if body := raw[2].Body; strings.Contains(string(body), before) {
				t.Errorf("the request after reload still carries the old prompt:\n%s", body)
			}
		})
	}
}
