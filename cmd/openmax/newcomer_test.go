package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// runBinary runs the real openmax binary with args in a fresh state and
// config directory, stdin empty, and returns its stdout, stderr and exit
// code.
func runBinary(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	bin := buildBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), "XDG_STATE_HOME="+t.TempDir(), "XDG_CONFIG_HOME="+t.TempDir())
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatalf("openmax %v: %v", args, err)
	}
	return out.String(), errb.String(), code
}

// TestOutputFilesNeedOverwrite: every command that writes a file named on
// its line (cassette inject and import, replay's --junit and --json)
// refuses to write over its own input, even with --overwrite, and keeps an
// existing file unless --overwrite; a refusal is a usage error (exit 2)
// that leaves every file as it was.
func TestOutputFilesNeedOverwrite(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.yaml")
	original, err := os.ReadFile(filepath.Join(libraryDir, "openai_plain.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(in, original, 0o644); err != nil {
		t.Fatal(err)
	}
	existing := filepath.Join(dir, "existing.yaml")
	tapes := filepath.Join(dir, "tapes")
	os.Mkdir(tapes, 0o755)
	if err := os.WriteFile(filepath.Join(tapes, "one.yaml"), original, 0o644); err != nil {
		t.Fatal(err)
	}
	inject := func(in, out string, extra ...string) []string {
		return append([]string{"cassette", "inject", in, out, "--op", "429@0"}, extra...)
	}
	imp := func(in, out string, extra ...string) []string {
		return append([]string{"cassette", "import", in, out}, extra...)
	}
	for _, tt := range []struct {
		name string
		args []string
		want string // in stderr
	}{
		{"inject onto its input", inject(in, in), "is the input"},
		{"inject onto its input by another name", inject(in, filepath.Join(dir, ".", "x", "..", "in.yaml")), "is the input"},
		{"inject onto its input with --overwrite", inject(in, in, "--overwrite"), "is the input"},
		{"inject over an existing file", inject(in, existing), "--overwrite"},
		{"import onto its input", imp(in, in, "--overwrite"), "is the input"},
		{"import over an existing file", imp(in, existing), "--overwrite"},
		{"junit over an existing file", []string{"replay", tapes, "--junit", existing}, "--overwrite"},
		{"json onto a cassette", []string{"replay", tapes, "--json", filepath.Join(tapes, "one.yaml"), "--overwrite"}, "is the input"},
	} {
		if err := os.WriteFile(existing, []byte("keep me\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		stdout, stderr, code := runBinary(t, tt.args...)
		if code != 2 || stdout != "" || !strings.Contains(stderr, tt.want) {
			t.Errorf("%s: exit %d, stdout %q, stderr %q (want exit 2 and %q)", tt.name, code, stdout, stderr, tt.want)
		}
		for path, want := range map[string][]byte{in: original, existing: []byte("keep me\n"), filepath.Join(tapes, "one.yaml"): original} {
			if got, _ := os.ReadFile(path); !bytes.Equal(got, want) {
				t.Errorf("%s: %s was changed", tt.name, path)
			}
		}
	}
	// With --overwrite an existing output is replaced; a new one needs nothing.
	for _, args := range [][]string{inject(in, existing, "--overwrite"), imp(in, existing, "--overwrite"), inject(in, filepath.Join(dir, "new.yaml"))} {
		os.WriteFile(existing, []byte("keep me\n"), 0o644)
		if _, stderr, code := runBinary(t, args...); code != 0 {
			t.Errorf("%v: exit %d: %s", args, code, stderr)
		}
		if got, _ := os.ReadFile(existing); args[len(args)-1] == "--overwrite" && !bytes.HasPrefix(got, []byte("version:")) {
			t.Errorf("%v: the existing output is not the cassette: %.40q", args, got)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "new.yaml")); err != nil {
		t.Errorf("inject to a new file: %v", err)
	}
}

// TestExitCodesOneRule: every command follows one rule (openmax --help
// states it): a mistake on the command line exits 2, a file it names that
// is missing or malformed exits 1, whichever command reads it.
func TestExitCodesOneRule(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.yaml")
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("{{ not: [yaml\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	project := t.TempDir()
	for _, file := range []string{missing, bad} {
		for _, args := range [][]string{
			{"fake-provider", "--scenario", file},
			{"fake-provider", "--cassette", file},
			{"fake-app-server", "--transcript", file},
			{"replay", file},
			{"cassette", "show", file},
			{"cassette", "inject", file, filepath.Join(dir, "out.yaml"), "--op", "429@0"},
			{"cassette", "import", file, filepath.Join(dir, "out.yaml")},
			{"cassette", "sweep", file},
			{"cassette", "scan", file},
			{"cassette", "prune", file},
			{"cassette", "verify", "--live", file},
			{"cassette", "diff", file, file},
		} {
			stdout, stderr, code := runBinary(t, args...)
			if code != 1 || stdout != "" || stderr == "" {
				t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 1 (a failure), the reason on stderr", args, code, stdout, stderr)
			}
		}
	}
	for _, args := range [][]string{
		{"--check", "--stdio", "--input", missing},
		{"--stdio", "--provider", "script", "--script", missing},
		{"--stdio", "--provider", "script", "--script", bad},
		{"-p", "hi", "--provider", "script", "--script", bad},
		{"record", "--cassette", filepath.Join(dir, "rec1.yaml"), "--provider", "script", "--script", missing},
		{"record", "--cassette", filepath.Join(dir, "rec2.yaml"), "--provider", "script", "--script", bad},
		{"--stdio", "--provider", "echo", "--project", filepath.Join(project, "nope")},
		{"view", missing},
		{"replay", filepath.Join(libraryDir, "openai_plain.yaml"), "--live-hooks", filepath.Join(project, "nope")},
	} {
		if stdout, stderr, code := runBinary(t, args...); code != 1 || stderr == "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 1", args, code, stdout, stderr)
		}
	}
	// A command-line mistake is 2 even when a file is missing too: the
	// line is judged before any file is read.
	for _, args := range [][]string{
		{"fake-provider", "--cassette", missing, "--pace", "fast"},
		{"fake-provider", "--scenario", missing, "--cassette", missing},
		{"replay", missing, "--pace", "fast"},
		{"cassette", "show", missing, "extra"},
		{"cassette", "sweep", missing, "--repeat", "0"},
		{"cassette", "scan", missing, "--no-such-flag"},
		{"cassette", "scan"},
		{"cassette", "verify", missing},
		{"cassette", "prune", missing, "--no-such-flag"},
		{"cassette", "diff", missing},
		{"fake-app-server"},
	} {
		if stdout, stderr, code := runBinary(t, args...); code != 2 || stdout != "" || !strings.Contains(stderr, "usage") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 with the usage", args, code, stdout, stderr)
		}
	}
	stdout, _, _ := runBinary(t, "--help")
	if !strings.Contains(stdout, "2  usage error") || !strings.Contains(stdout, "malformed included") {
		t.Errorf("openmax --help does not state the exit code rule:\n%s", stdout)
	}
}

// TestPromptNeedsProvider: `openmax -p hi` with no provider names -p, the
// flag the user gave, not --stdio.
func TestPromptNeedsProvider(t *testing.T) {
	stdout, stderr, code := runBinary(t, "-p", "hi")
	if code != 2 || stdout != "" || !strings.Contains(stderr, "-p needs --provider") || strings.Contains(stderr, "--stdio") {
		t.Errorf("exit %d, stdout %q, stderr %q; want exit 2 and \"-p needs --provider\"", code, stdout, stderr)
	}
}

// TestBareOpenmaxPointsOn: `openmax` with nothing to do points a newcomer
// to replay and help, on stderr, exit 2.
func TestBareOpenmaxPointsOn(t *testing.T) {
	stdout, stderr, code := runBinary(t)
	if code != 2 || stdout != "" || !strings.Contains(stderr, "openmax replay ") || !strings.Contains(stderr, "openmax help") {
		t.Errorf("exit %d, stdout %q, stderr %q; want exit 2 pointing to openmax replay and openmax help", code, stdout, stderr)
	}
}

// TestVersionHelp: `openmax version -h` is the command's help, like every
// other command's -h; plain `openmax version` prints the version.
func TestVersionHelp(t *testing.T) {
	for _, args := range [][]string{{"version", "-h"}, {"version", "--help"}, {"help", "version"}} {
		stdout, stderr, code := runBinary(t, args...)
		if code != 0 || stderr != "" || !strings.HasPrefix(stdout, "usage: openmax version") || strings.Contains(stdout, Version) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want the help", args, code, stdout, stderr)
		}
	}
	if stdout, _, code := runBinary(t, "version"); code != 0 || stdout != "openmax "+Version+"\n" {
		t.Errorf("version: exit %d, %q", code, stdout)
	}
	if stdout, stderr, code := runBinary(t, "version", "extra"); code != 2 || stdout != "" || !strings.Contains(stderr, "unexpected argument") {
		t.Errorf("version extra: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}

// TestSweepSaysHowFar: `cassette sweep` is not silent for its whole run.
// With stderr a pipe it says once how many replays it will run; with
// stderr a terminal (a pseudo-terminal here) it redraws a done/total line
// after every replay, cleared before the summary.
func TestSweepSaysHowFar(t *testing.T) {
	one := filepath.Join(libraryDir, "openai_plain.yaml")
	stdout, stderr, code := runBinary(t, "cassette", "sweep", one, "--max-variants", "3")
	if code != 0 || !strings.Contains(stdout, "openai_plain") {
		t.Fatalf("exit %d\n%s%s", code, stdout, stderr)
	}
	count := "openmax cassette sweep: 4 replays to run\n"
	if !strings.HasPrefix(stderr, count) || strings.Contains(stderr, "\r") || !strings.Contains(stderr, "4 variants over 1 cassette") {
		t.Errorf("stderr to a pipe: %q; want it to start %q, no redrawn line", stderr, count)
	}

	controller, terminal := openPTY(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, buildBinary(t), "cassette", "sweep", one, "--max-variants", "3", "--parallel", "1")
	cmd.Env = append(os.Environ(), "XDG_STATE_HOME="+t.TempDir(), "XDG_CONFIG_HOME="+t.TempDir())
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, terminal
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	terminal.Close() // the child holds its own copy
	var seen bytes.Buffer
	read := make(chan struct{})
	go func() { defer close(read); seen.ReadFrom(controller) }() // EIO once the child exits
	if err := cmd.Wait(); err != nil {
		t.Fatalf("sweep on a terminal: %v", err)
	}
	<-read
	got := seen.String()
	for _, want := range []string{"openmax cassette sweep: 0/4 replays", "openmax cassette sweep: 2/4 replays", "openmax cassette sweep: 4/4 replays", "\r\x1b[Kopenmax cassette sweep: 4 variants over 1 cassette"} {
		if !strings.Contains(got, want) {
			t.Errorf("stderr on a terminal lacks %q:\n%q", want, got)
		}
	}
}

// TestReportsCarryTheGoldenDiff: the JUnit and JSON reports of `openmax
// replay DIR` carry the diff of a transcript that differs from its golden
// file, not only stderr.
func TestReportsCarryTheGoldenDiff(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "tapes")
	os.Mkdir(dir, 0o755)
	data, err := os.ReadFile(filepath.Join(libraryDir, "openai_plain.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "plain.yaml"), data, 0o644)
	if _, stderr, code := runBinary(t, "replay", dir, "--update"); code != 0 {
		t.Fatalf("--update: exit %d: %s", code, stderr)
	}
	golden := filepath.Join(root, "golden", "tapes", "plain.golden")
	want, _ := os.ReadFile(golden)
	edited := strings.Replace(string(want), "exit: 0", "exit: 7", 1)
	if edited == string(want) {
		t.Fatalf("no exit line in the golden file:\n%s", want)
	}
	os.WriteFile(golden, []byte(edited), 0o644)
	junit, js := filepath.Join(root, "r.xml"), filepath.Join(root, "r.json")
	if _, stderr, code := runBinary(t, "replay", dir, "--junit", junit, "--json", js); code != 1 || !strings.Contains(stderr, "-exit: 7") {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	x, _ := os.ReadFile(junit)
	if !strings.Contains(string(x), "-exit: 7") || !strings.Contains(string(x), "+exit: 0") {
		t.Errorf("the JUnit report lacks the diff:\n%s", x)
	}
	var doc struct {
		Results []struct{ Name, Diff string }
	}
	j, _ := os.ReadFile(js)
	if err := json.Unmarshal(j, &doc); err != nil || len(doc.Results) != 1 || !strings.Contains(doc.Results[0].Diff, "-exit: 7") || !strings.Contains(doc.Results[0].Diff, "+exit: 0") {
		t.Errorf("the JSON report lacks the diff (%v):\n%s", err, j)
	}
}

// TestShowCompletedStreamIsClean: `cassette show` labels a stream the
// client closed after its completion signal (codex hangs up once it has
// response.completed; the recorder sees a cancel) as a clean end, and a
// stream cancelled before its end still as a cancel.
func TestShowCompletedStreamIsClean(t *testing.T) {
	stdout, stderr, code := runBinary(t, "cassette", "show", filepath.Join(libraryDir, "responses_5xx.yaml"))
	if code != 0 || !strings.Contains(stdout, "  end: clean (the client closed the stream after response.completed)\n") || strings.Contains(stdout, "end: cancel") {
		t.Errorf("a completed Responses stream: exit %d, stderr %q\n%s", code, stderr, stdout)
	}
	stdout, _, code = runBinary(t, "cassette", "show", filepath.Join(libraryDir, "idle_stall_before_text.yaml"))
	if code != 0 || !strings.Contains(stdout, "  end: cancel at ") {
		t.Errorf("a stream cancelled before its end: exit %d\n%s", code, stdout)
	}
}

// TestShowcaseStory: the README's showcase, `openmax replay
// cassettes/story.yaml --view`, shows a plausible project (not the root
// directory the test suite recorded it in) and a session that offered the
// model the built-in tools only, none of the test suite's (crash, block,
// touch, echo_args).
func TestShowcaseStory(t *testing.T) {
	story := filepath.Join(libraryDir, "story.yaml")
	stdout, stderr, code := runBinary(t, "replay", story, "--view")
	if code != 0 || !strings.Contains(stdout, "project /home/you/demo\n") || strings.Contains(stdout, "project /\n") {
		t.Errorf("--view: exit %d, stderr %q\n%s", code, stderr, stdout)
	}
	show, _, _ := runBinary(t, "cassette", "show", story)
	data, _ := os.ReadFile(story)
	for _, tool := range []string{"crash", "block", "touch", "echo_args"} {
		if strings.Contains(show, ", "+tool) || strings.Contains(string(data), `"name":"`+tool+`"`) || strings.Contains(string(data), "- name: "+tool+"\n") {
			t.Errorf("the showcase offers the test-only tool %s", tool)
		}
	}
	if !strings.Contains(show, "tools: read_file, list_files, search, write_file, edit_file, run_command\n") {
		t.Errorf("cassette show: the tools are not the built-in ones:\n%s", show)
	}
}

// TestCassetteUsageListsEverySubcommand: `openmax cassette --help` names
// every subcommand the dispatcher knows, and a near miss of each is
// suggested back.
func TestCassetteUsageListsEverySubcommand(t *testing.T) {
	stdout, _, code := runBinary(t, "cassette", "--help")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, name := range cassetteNames() {
		if !strings.Contains(stdout, "openmax cassette "+name+" ") {
			t.Errorf("cassette --help lacks %s:\n%s", name, stdout)
		}
		_, stderr, code := runBinary(t, "cassette", name+"x")
		if code != 2 || !strings.Contains(stderr, `did you mean "`+name+`"?`) {
			t.Errorf("%sx: exit %d, %s", name, code, stderr)
		}
	}
}
