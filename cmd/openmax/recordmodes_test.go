package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	stock "github.com/dnaeon/go-vcr/v2/cassette"

	"github.com/openmax/openmax/recorder/cassette"
	"github.com/openmax/openmax/recorder/mode"
)

// modesKey is the API key the recordings of these tests are made with;
// it never reaches a cassette.
const modesKey = "sk-modes-test-0123456789"

// modesScenario writes a fake provider scenario answering each request
// with the next of replies, and returns its path.
func modesScenario(t *testing.T, replies ...string) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("replies:\n")
	for _, r := range replies {
		fmt.Fprintf(&b, "  - chunks:\n      - text: %q\n      - finish: stop\n", r)
	}
	path := filepath.Join(t.TempDir(), "scenario.yaml")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// modesRig is what a test of the record modes runs against: the binary,
// a trusted project, an environment with an OpenAI key.
type modesRig struct {
	t       *testing.T
	ctx     context.Context
	bin     string
	project string
	env     []string
}

func newModesRig(t *testing.T) *modesRig {
	t.Helper()
	bin := buildBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	project := t.TempDir()
	env := trustedBinaryEnv(t, ctx, bin, project, "", "OPENAI_API_KEY="+modesKey, "CI=", "OPENMAX_RECORD_MODE=")
	return &modesRig{t: t, ctx: ctx, bin: bin, project: project, env: env}
}

// fake starts a fake provider serving replies, and returns its base URL
// and the server (to stop it).
func (r *modesRig) fake(replies ...string) *childServer {
	r.t.Helper()
	return startServer(r.t, r.ctx, r.bin, "fake-provider", "--scenario", modesScenario(r.t, replies...))
}

// session runs `openmax ARGS...` as a live stdio session, sending each
// text as a user turn once the one before is done, and returns it still
// running (finish or kill it).
func (r *modesRig) session(texts []string, args ...string) *liveStdio {
	r.t.Helper()
	s := startLive(r.t, r.ctx, r.bin, r.env, args...)
	for _, text := range texts {
		s.send(fmt.Sprintf(`{"cmd":"user","text":%q}`, text))
		if done := s.until(r.ctx, `"type":"done"`); !strings.Contains(done, `"stop_reason":"end_turn"`) && !strings.Contains(done, `"stop_reason":"stop"`) {
			r.t.Fatalf("turn %q ended %s\nstderr: %s", text, done, s.stderr.String())
		}
	}
	return s
}

// record records a session of texts against base into cas.
func (r *modesRig) record(cas, base string, texts ...string) {
	r.t.Helper()
	s := r.session(texts, "record", "--cassette", cas, "--provider", "openai", "--base-url", base+"/v1", "--project", r.project, "--session-id", "s")
	if code := s.finish(); code != 0 {
		r.t.Fatalf("record: exit %d\n%s", code, s.stderr.String())
	}
}

// turns are the prompts and replies of the sessions these tests record.
var turns = []struct{ prompt, reply string }{{"first", "One."}, {"second", "Two."}, {"third", "Three."}}

// recorded records the first n turns into cas against a fake provider,
// stops it (so nothing more can reach it) and returns its base URL.
func (r *modesRig) recorded(cas string, n int) string {
	r.t.Helper()
	var prompts, replies []string
	for _, tn := range turns[:n] {
		prompts, replies = append(prompts, tn.prompt), append(replies, tn.reply)
	}
	fp := r.fake(replies...)
	r.record(cas, fp.URL, prompts...)
	if code := fp.stop(r.t); code != 0 {
		r.t.Fatalf("the fake provider exited %d", code)
	}
	return fp.URL
}

// run runs the binary to its end and returns stdout, stderr, exit code.
func (r *modesRig) run(args ...string) (string, string, int) {
	r.t.Helper()
	cmd := exec.CommandContext(r.ctx, r.bin, args...)
	cmd.Env = r.env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if err != nil && cmd.ProcessState == nil {
		r.t.Fatal(err)
	}
	return out.String(), errb.String(), cmd.ProcessState.ExitCode()
}

// items is the text of each interaction of the cassette at path, checked
// to be the file's own bytes.
func items(t *testing.T, path string) ([][]byte, *cassette.File) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := cassette.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	its, err := cassette.Items(data, f)
	if err != nil {
		t.Fatal(err)
	}
	out := make([][]byte, len(its))
	for i, it := range its {
		if !bytes.Contains(data, it.Text) {
			t.Fatalf("%s: interaction %d's text is not in the file", path, i)
		}
		out[i] = it.Text
	}
	if _, err := stock.Load(strings.TrimSuffix(path, ".yaml")); err != nil {
		t.Errorf("stock go-vcr cannot load %s: %v", path, err)
	}
	return out, f
}

// editCommand changes the recorded text of a user command in place.
func editCommand(t *testing.T, path, from, to string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	old := fmt.Sprintf(`"text":%q}`, from)
	if bytes.Count(data, []byte(old)) != 1 {
		t.Fatalf("%s holds %q %d times, want once", path, old, bytes.Count(data, []byte(old)))
	}
	data = bytes.Replace(data, []byte(old), []byte(fmt.Sprintf(`"text":%q}`, to)), 1)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestRecordFromChange: a three-turn session recorded, turn 2's prompt
// edited in the cassette, then `record --from-change`: turn 1 is served
// from the cassette (its live server is gone), its interaction stays byte
// for byte, turns 2 and 3 are recorded live, stderr names the changed
// request with the miss diff, and the new cassette replays clean.
func TestRecordFromChange(t *testing.T) {
	r := newModesRig(t)
	cas := filepath.Join(t.TempDir(), "three.yaml")
	r.recorded(cas, 3)
	before, _ := items(t, cas)
	if len(before) != 3 {
		t.Fatalf("recorded %d interactions, want 3", len(before))
	}

	editCommand(t, cas, "second", "second, edited")
	edited, _ := os.ReadFile(cas)
	second := r.fake("Two, again.", "Three, again.")
	stdout, stderr, code := r.run("record", "--from-change", cas, "--base-url", second.URL+"/v1")
	if code != 0 {
		t.Fatalf("from-change: exit %d\n%s", code, stderr)
	}
	for _, want := range []string{"request 1 changed", "nearest is interaction 1", "messages", "second, edited", "kept 1 interaction(s) byte for byte (0), recorded 2 live"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr does not say %q:\n%s", want, stderr)
		}
	}
	if !strings.Contains(stdout, "One.") || !strings.Contains(stdout, "Two, again.") || !strings.Contains(stdout, "Three, again.") {
		t.Errorf("the new transcript:\n%s", stdout)
	}
	after, f := items(t, cas)
	if len(after) != 3 {
		t.Fatalf("the new cassette has %d interactions, want 3", len(after))
	}
	if !bytes.Equal(before[0], after[0]) {
		t.Errorf("interaction 0 is not byte for byte what it was:\n%s\n---\n%s", before[0], after[0])
	}
	if !bytes.Contains(edited, after[0]) {
		t.Errorf("interaction 0's bytes are not the old file's")
	}
	for i, want := range map[int]string{1: "Two, again.", 2: "Three, again."} {
		if !strings.Contains(f.Interactions[i].Response.Body, want) {
			t.Errorf("interaction %d is not the live %q:\n%s", i, want, f.Interactions[i].Response.Body)
		}
	}
	if !strings.Contains(f.Interactions[1].Request.Body, "second, edited") || strings.Contains(string(bytes.Join(after, nil)), modesKey) {
		t.Errorf("interaction 1's request is not the edited turn, or the key is on disk")
	}
	if code := second.stop(t); code != 0 {
		t.Errorf("the live fake provider exited %d", code)
	}

	// The new cassette replays clean: every request served, none unused.
	if _, stderr, code := r.run("replay", cas); code != 0 || stderr != "" {
		t.Errorf("replaying the new cassette: exit %d\n%s", code, stderr)
	}
	// Nothing changed now: nothing is written.
	now, _ := os.ReadFile(cas)
	if _, stderr, code := r.run("record", "--from-change", cas, "--base-url", "http://127.0.0.1:1/v1"); code != 0 || !strings.Contains(stderr, "nothing changed") {
		t.Errorf("from-change with nothing changed: exit %d\n%s", code, stderr)
	}
	if again, _ := os.ReadFile(cas); !bytes.Equal(again, now) {
		t.Errorf("from-change with nothing changed rewrote the cassette")
	}
}

// TestRecordFromChangeOutput: -o writes elsewhere and follows the output
// rule; a refusal is a usage error that leaves every file as it was.
func TestRecordFromChangeOutput(t *testing.T) {
	r := newModesRig(t)
	dir := t.TempDir()
	cas := filepath.Join(dir, "c.yaml")
	r.recorded(cas, 2)
	editCommand(t, cas, "second", "second, edited")
	orig, _ := os.ReadFile(cas)
	existing := filepath.Join(dir, "existing.yaml")
	os.WriteFile(existing, []byte("keep me\n"), 0o644)
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"onto its input", []string{"-o", cas}, "is the input"},
		{"over an existing file", []string{"-o", existing}, "--overwrite"},
		{"with harness flags", []string{"--model", "x"}, `unexpected "--model"`},
		{"with --mode", []string{"--mode", "missing"}, "--mode does not go with it"},
	} {
		args := append([]string{"record", "--from-change", cas, "--base-url", "http://127.0.0.1:1/v1"}, tt.args...)
		if _, stderr, code := r.run(args...); code != 2 || !strings.Contains(stderr, tt.want) {
			t.Errorf("%s: exit %d, stderr %q; want 2 saying %q", tt.name, code, stderr, tt.want)
		}
	}
	if got, _ := os.ReadFile(cas); !bytes.Equal(got, orig) {
		t.Errorf("a refused run changed the input")
	}
	if got, _ := os.ReadFile(existing); string(got) != "keep me\n" {
		t.Errorf("a refused run changed the existing file")
	}

	live := r.fake("Two, again.")
	out := filepath.Join(dir, "out.yaml")
	if _, stderr, code := r.run("record", "--from-change", cas, "-o", out, "--base-url", live.URL+"/v1"); code != 0 {
		t.Fatalf("-o: exit %d\n%s", code, stderr)
	}
	if got, _ := os.ReadFile(cas); !bytes.Equal(got, orig) {
		t.Errorf("-o changed the input")
	}
	before, _ := items(t, cas)
	after, _ := items(t, out)
	if len(after) != 2 || !bytes.Equal(before[0], after[0]) {
		t.Errorf("-o: %d interactions, the first kept byte for byte: %v", len(after), len(after) > 0 && bytes.Equal(before[0], after[0]))
	}
}

// TestRecordModeMissingKilled: `record --mode missing` on a recorded
// session serves the turn the cassette holds (its server is gone), sends
// the new one live and appends it; killed with SIGKILL right after, the
// cassette loads in openmax and in stock go-vcr, keeps the old interaction
// byte for byte, holds the new one, and replays the session just run.
func TestRecordModeMissingKilled(t *testing.T) {
	r := newModesRig(t)
	cas := filepath.Join(t.TempDir(), "m.yaml")
	r.recorded(cas, 1)
	before, _ := items(t, cas)

	live := r.fake("Two.")
	s := r.session([]string{"first", "second"}, "record", "--mode", "missing", "--cassette", cas, "--provider", "openai", "--base-url", live.URL+"/v1", "--project", r.project, "--session-id", "s")
	if err := s.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	s.cmd.Wait()
	if got := strings.Join(s.seen, "\n"); !strings.Contains(got, "One.") || !strings.Contains(got, "Two.") {
		t.Fatalf("the session's replies:\n%s", got)
	}
	after, f := items(t, cas)
	if len(after) != 2 || !bytes.Equal(before[0], after[0]) {
		t.Fatalf("after the kill: %d interactions (want 2), the first byte for byte: %v", len(after), len(after) > 0 && bytes.Equal(before[0], after[0]))
	}
	if !strings.Contains(f.Interactions[1].Response.Body, "Two.") || f.Session == nil || len(f.Session.Commands) != 2 {
		t.Fatalf("the appended interaction or the session is wrong: session %+v", f.Session)
	}
	if code := live.stop(t); code != 0 {
		t.Errorf("the live fake exited %d", code)
	}
	if _, stderr, code := r.run("replay", cas); code != 0 {
		t.Errorf("replaying the cassette left by the kill: exit %d\n%s", code, stderr)
	}
}

// TestRecordModeReplay: `record --mode replay` (and once, on a cassette
// that exists) serves the harness from the cassette and writes nothing; a
// turn the cassette lacks fails with the miss on stderr, exit 1; a missing
// cassette is a failure, exit 1.
func TestRecordModeReplay(t *testing.T) {
	r := newModesRig(t)
	cas := filepath.Join(t.TempDir(), "r.yaml")
	gone := r.recorded(cas, 1)
	orig, _ := os.ReadFile(cas)
	args := func(m string) []string {
		return []string{"record", "--mode", m, "--cassette", cas, "--provider", "openai", "--base-url", gone + "/v1", "--project", r.project, "--session-id", "s"}
	}
	keyless := *r
	keyless.env = append(append([]string(nil), r.env...), "OPENAI_API_KEY=")
	for _, m := range []string{"replay", "once"} {
		for _, rig := range []*modesRig{r, &keyless} {
			s := rig.session([]string{"first"}, args(m)...)
			if code := s.finish(); code != 0 || !strings.Contains(strings.Join(s.seen, "\n"), "One.") {
				t.Errorf("mode %s: exit %d\n%s\n%s", m, code, strings.Join(s.seen, "\n"), s.stderr.String())
			}
		}
	}
	s := startLive(t, r.ctx, r.bin, r.env, args("replay")...)
	s.send(`{"cmd":"user","text":"something else"}`)
	s.until(r.ctx, `"type":"done"`)
	if code := s.finish(); code != 1 || !strings.Contains(s.stderr.String(), "is not in") {
		t.Errorf("a miss under mode replay: exit %d\n%s", code, s.stderr.String())
	}
	if got, _ := os.ReadFile(cas); !bytes.Equal(got, orig) {
		t.Errorf("mode replay wrote the cassette")
	}
	if _, stderr, code := r.run("record", "--mode", "replay", "--cassette", filepath.Join(t.TempDir(), "none.yaml"), "--provider", "openai"); code != 1 || !strings.Contains(stderr, "no cassette") {
		t.Errorf("mode replay without a cassette: exit %d\n%s", code, stderr)
	}
	if _, stderr, code := r.run("record", "--mode", "sometimes", "--cassette", cas); code != 2 || !strings.Contains(stderr, `unknown record mode "sometimes"`) {
		t.Errorf("a bad mode: exit %d\n%s", code, stderr)
	}
}

// TestReplayModeMissing: `replay --mode missing` replays a recorded
// session whose second prompt was edited: the turns that changed go live
// and are appended, every old interaction kept byte for byte (the two the
// new session no longer uses too: prune's work).
func TestReplayModeMissing(t *testing.T) {
	r := newModesRig(t)
	cas := filepath.Join(t.TempDir(), "m.yaml")
	r.recorded(cas, 3)
	before, _ := items(t, cas)
	editCommand(t, cas, "second", "second, edited")
	live := r.fake("Two, again.", "Three, again.")
	stdout, stderr, code := r.run("replay", cas, "--mode", "missing", "--base-url", live.URL+"/v1")
	if code != 0 || !strings.Contains(stdout, "Three, again.") || !strings.Contains(stderr, "sent live") || !strings.Contains(stderr, "kept 3 interaction(s) byte for byte, recorded 2 live") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	after, _ := items(t, cas)
	if len(after) != 5 {
		t.Fatalf("%d interactions, want 5 (3 kept, 2 appended)", len(after))
	}
	for i := range before {
		if !bytes.Equal(before[i], after[i]) {
			t.Errorf("interaction %d is not byte for byte what it was", i)
		}
	}
	if _, stderr, code := r.run("replay", cas, "--allow-unused"); code != 0 {
		t.Errorf("replaying the appended cassette: exit %d\n%s", code, stderr)
	}
}

// TestFakeProviderModeMissing: `fake-provider --cassette --mode missing
// --upstream` serves what the cassette holds and forwards what it lacks,
// recording it after the interactions the cassette had.
func TestFakeProviderModeMissing(t *testing.T) {
	r := newModesRig(t)
	cas := filepath.Join(t.TempDir(), "f.yaml")
	r.recorded(cas, 1)
	before, _ := items(t, cas)
	up := r.fake("Two.")
	fp := startServer(t, r.ctx, r.bin, "fake-provider", "--cassette", cas, "--mode", "missing", "--upstream", up.URL, "--pace", "instant")
	s := r.session([]string{"first", "second"}, "--stdio", "--provider", "openai", "--base-url", fp.URL+"/v1", "--project", r.project)
	if code := s.finish(); code != 0 || !strings.Contains(strings.Join(s.seen, "\n"), "Two.") {
		t.Fatalf("the client: exit %d\n%s", code, strings.Join(s.seen, "\n"))
	}
	if code := fp.stop(t); code != 0 || !strings.Contains(fp.stderr.String(), "recorded 1 new") {
		t.Fatalf("fake-provider: exit %d\n%s", code, fp.stderr.String())
	}
	after, f := items(t, cas)
	if len(after) != 2 || !bytes.Equal(before[0], after[0]) || !strings.Contains(f.Interactions[1].Response.Body, "Two.") {
		t.Errorf("%d interactions; the first kept byte for byte: %v", len(after), len(after) > 0 && bytes.Equal(before[0], after[0]))
	}
	if _, stderr, code := r.run("fake-provider", "--cassette", filepath.Join(t.TempDir(), "none.yaml"), "--mode", "missing"); code != 2 || !strings.Contains(stderr, "--upstream") {
		t.Errorf("a recording mode without --upstream: exit %d\n%s", code, stderr)
	}
}

// TestModeHelpFromOneTable: every command taking --mode lists every mode
// with what it does, from the one table.
func TestModeHelpFromOneTable(t *testing.T) {
	for _, args := range [][]string{{"record", "--help"}, {"replay", "--help"}, {"fake-provider", "--help"}} {
		stdout, _, code := runCLI(t, "", args...)
		if code != 0 {
			t.Fatalf("%v: exit %d", args, code)
		}
		for _, m := range mode.All() {
			if !strings.Contains(stdout, string(m)+" ") || !strings.Contains(stdout, m.Describe()) {
				t.Errorf("%v does not describe mode %s:\n%s", args, m, stdout)
			}
		}
	}
}

// TestCassettePrune: a session re-recorded with --mode missing after its
// second prompt changed leaves two interactions no replay uses; prune
// --check reports them (exit 1, nothing written), prune removes them (the
// rest byte for byte, the file loading in stock go-vcr and replaying clean
// without --allow-unused), and a second prune finds nothing.
func TestCassettePrune(t *testing.T) {
	r := newModesRig(t)
	cas := filepath.Join(t.TempDir(), "p.yaml")
	r.recorded(cas, 3)
	editCommand(t, cas, "second", "second, edited")
	live := r.fake("Two, again.", "Three, again.")
	if _, stderr, code := r.run("replay", cas, "--mode", "missing", "--base-url", live.URL+"/v1"); code != 0 {
		t.Fatalf("replay --mode missing: exit %d\n%s", code, stderr)
	}
	live.stop(t)
	before, f := items(t, cas)
	orig, _ := os.ReadFile(cas)
	if _, _, code := r.run("replay", cas); code != 1 {
		t.Fatalf("the cassette with leftovers replays without complaint (exit %d)", code)
	}

	stdout, stderr, code := r.run("cassette", "prune", cas, "--check")
	if code != 1 || stderr != "" {
		t.Fatalf("--check: exit %d, stderr %q", code, stderr)
	}
	for _, i := range []int{1, 2} {
		want := fmt.Sprintf("would remove interaction %d: POST %s: never requested: the session goes from interaction 0 to 3 without it", i, f.Interactions[i].Request.URL)
		if !strings.Contains(stdout, want) {
			t.Errorf("--check does not say %q:\n%s", want, stdout)
		}
	}
	if got, _ := os.ReadFile(cas); !bytes.Equal(got, orig) {
		t.Fatalf("--check wrote the cassette")
	}

	stdout, stderr, code = r.run("cassette", "prune", cas)
	if code != 0 || !strings.Contains(stdout, "removed interaction 1") || !strings.Contains(stdout, "kept 3 interaction(s), removed 2") {
		t.Fatalf("prune: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	after, pf := items(t, cas)
	if len(after) != 3 || !bytes.Equal(after[0], before[0]) || !bytes.Equal(after[1], before[3]) || !bytes.Equal(after[2], before[4]) {
		t.Fatalf("pruned: %d interactions, not 0, 3 and 4 byte for byte", len(after))
	}
	if pf.Session == nil || len(pf.Session.Commands) != len(f.Session.Commands) {
		t.Errorf("the session was not kept")
	}
	if _, stderr, code := r.run("replay", cas); code != 0 {
		t.Errorf("the pruned cassette does not replay clean: exit %d\n%s", code, stderr)
	}
	pruned, _ := os.ReadFile(cas)
	if stdout, _, code := r.run("cassette", "prune", cas, "--check"); code != 0 || !strings.Contains(stdout, "nothing to prune") {
		t.Errorf("prune --check after prune: exit %d\n%s", code, stdout)
	}
	if got, _ := os.ReadFile(cas); !bytes.Equal(got, pruned) {
		t.Errorf("a prune with nothing to do changed the file")
	}
}

// TestCassettePruneRefuses: a cassette whose replay does not reproduce
// its recording, or that holds no session, is not pruned (exit 1, the
// file as it was); a directory is pruned cassette by cassette.
func TestCassettePruneRefuses(t *testing.T) {
	r := newModesRig(t)
	dir := t.TempDir()
	cas := filepath.Join(dir, "a.yaml")
	r.recorded(cas, 2)
	editCommand(t, cas, "second", "second, edited")
	orig, _ := os.ReadFile(cas)
	if _, stderr, code := r.run("cassette", "prune", cas); code != 1 || !strings.Contains(stderr, "does not reproduce the recording") || !strings.Contains(stderr, "request 1 missed") {
		t.Errorf("a replay that misses: exit %d\n%s", code, stderr)
	}
	if got, _ := os.ReadFile(cas); !bytes.Equal(got, orig) {
		t.Errorf("a refused prune changed the file")
	}
	noSession := filepath.Join(t.TempDir(), "proxy.yaml")
	data, _ := os.ReadFile(cas)
	f, _ := cassette.Parse(data)
	f.Session = nil
	if err := f.Save(noSession); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := r.run("cassette", "prune", noSession); code != 1 || !strings.Contains(stderr, "no recorded harness session") {
		t.Errorf("a cassette without a session: exit %d\n%s", code, stderr)
	}
	foreign := filepath.Join(t.TempDir(), "vcrpy.yaml")
	vcrpy, err := os.ReadFile(filepath.Join(libraryDir, "real", "autogpt-cassettes-206c0689__test_write_file.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(foreign, vcrpy, 0o644)
	if _, stderr, code := r.run("cassette", "prune", foreign); code != 1 || !strings.Contains(stderr, "made up") {
		t.Errorf("another tool's recording: exit %d\n%s", code, stderr)
	}
	if got, _ := os.ReadFile(foreign); !bytes.Equal(got, vcrpy) {
		t.Errorf("another tool's recording was changed")
	}
	if stdout, stderr, code := r.run("cassette", "prune", libraryDir, "--check"); code != 0 {
		t.Errorf("the library has interactions no replay uses, or does not replay: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if _, stderr, code := r.run("cassette", "prune"); code != 2 || !strings.Contains(stderr, "usage") {
		t.Errorf("no argument: exit %d\n%s", code, stderr)
	}
}
