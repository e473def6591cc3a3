package main

import (
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openmax/openmax/recorder/cassette"
)

// libraryCassette loads a copy of a library cassette to edit.
func libraryCassette(t *testing.T, name string) *cassette.File {
	t.Helper()
	f, err := cassette.Load(filepath.Join(libraryDir, name+".yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func save(t *testing.T, f *cassette.File, path string) string {
	t.Helper()
	if err := f.Save(path); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestReplaySaysWhenItDidNotReproduce: a refused command, a missed request
// and unused interactions each make replay exit 1 with the reason on
// stderr, the transcript still on stdout; a command refused when it was
// recorded is no failure.
func TestReplaySaysWhenItDidNotReproduce(t *testing.T) {
	dir := t.TempDir()
	refused := libraryCassette(t, "openai_plain")
	refused.Session.Commands = append(refused.Session.Commands, cassette.Command{
		Anchor: cassette.Anchor{Turn: 1, After: "done"}, Line: `{"cmd":"approve","approval_id":"nope","approved":true}`})
	recordedRefusal := libraryCassette(t, "openai_plain")
	recordedRefusal.Session.Commands = append(refused.Session.Commands[:1:1], cassette.Command{
		Anchor: cassette.Anchor{Turn: 1, After: "done"}, Line: `{"cmd":"approve","approval_id":"nope","approved":true}`, Refused: true})
	unused := libraryCassette(t, "openai_plain")
	unused.Interactions = append(unused.Interactions, unused.Interactions[0])
	noSession := libraryCassette(t, "openai_plain")
	noSession.Session = nil

	tests := []struct {
		name   string
		path   string
		args   []string
		code   int
		stderr string
	}{
		{"refused", save(t, refused, filepath.Join(dir, "refused.yaml")), nil, 1, `recorded command 1 ({"cmd":"approve"`},
		{"refused when recorded", save(t, recordedRefusal, filepath.Join(dir, "recorded.yaml")), nil, 0, ""},
		{"unused", save(t, unused, filepath.Join(dir, "unused.yaml")), nil, 1, "1 recorded interaction(s) never requested: 1 (--allow-unused accepts that)"},
		{"unused allowed", filepath.Join(dir, "unused.yaml"), []string{"--allow-unused"}, 0, ""},
		{"no session", save(t, noSession, filepath.Join(dir, "nosession.yaml")), nil, 1, "openmax fake-provider --cassette FILE"},
	}
	missed := filepath.Join(dir, "missed.yaml")
	if _, stderr, code := runCLI(t, "", "cassette", "inject", filepath.Join(libraryDir, "openai_plain.yaml"), missed, "--op", "reset@0:byte=0"); code != 0 {
		t.Fatal(stderr)
	}
	tests = append(tests, struct {
		name   string
		path   string
		args   []string
		code   int
		stderr string
	}{"missed", missed, nil, 1, "request 1 missed"})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stdout, stderr, code := runCLI(t, "", append([]string{"replay", tt.path}, tt.args...)...)
			if code != tt.code || !strings.Contains(stderr, tt.stderr) {
				t.Errorf("exit %d, stderr %q; want exit %d and %q", code, stderr, tt.code, tt.stderr)
			}
			if tt.code == 0 && stderr != "" {
				t.Errorf("stderr %q, want nothing", stderr)
			}
			if tt.name != "no session" && !strings.HasPrefix(stdout, `{"type":"hello"`) {
				t.Errorf("no transcript on stdout: %q", stdout)
			}
			if tt.name == "no session" && !strings.Contains(stderr, "openmax cassette import FILE OUT.yaml") {
				t.Errorf("the second way out is missing: %q", stderr)
			}
		})
	}
}

// TestReplayDir: a folder replays to a table, FAIL rows for what did not
// reproduce, --update against the default golden folder says updated, and
// --junit/--json write reports CI systems read.
func TestReplayDir(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "tapes")
	os.Mkdir(dir, 0o755)
	save(t, libraryCassette(t, "openai_plain"), filepath.Join(dir, "good.yaml"))
	unused := libraryCassette(t, "openai_plain")
	unused.Interactions = append(unused.Interactions, unused.Interactions[0])
	save(t, unused, filepath.Join(dir, "unused.yaml"))

	stdout, stderr, code := runCLI(t, "", "replay", dir, "--update", "--allow-unused")
	if code != 0 || !strings.Contains(stdout, "good") || strings.Count(stdout, "updated") < 2 || strings.Contains(stdout, "matches") {
		t.Fatalf("--update: exit %d\n%s%s", code, stdout, stderr)
	}
	if _, err := os.Stat(filepath.Join(root, "golden", "tapes", "good.golden")); err != nil {
		t.Fatalf("the default golden folder was not written: %v", err)
	}

	junit, js := filepath.Join(root, "report.xml"), filepath.Join(root, "report.json")
	stdout, stderr, code = runCLI(t, "", "replay", dir, "--junit", junit, "--json", js)
	if code != 1 {
		t.Fatalf("exit %d, want 1 for the unused interaction\n%s%s", code, stdout, stderr)
	}
	var good, bad string
	for _, l := range strings.Split(stdout, "\n") {
		switch {
		case strings.HasPrefix(l, "good "):
			good = l
		case strings.HasPrefix(l, "unused "):
			bad = l
		}
	}
	if !strings.Contains(good, "pass") || !strings.Contains(bad, "FAIL") || !strings.Contains(bad, "never requested") {
		t.Errorf("table:\n%s", stdout)
	}
	var suites struct {
		Suites []struct {
			Tests    int `xml:"tests,attr"`
			Failures int `xml:"failures,attr"`
		} `xml:"testsuite"`
	}
	data, err := os.ReadFile(junit)
	if err != nil || xml.Unmarshal(data, &suites) != nil || len(suites.Suites) != 1 || suites.Suites[0].Tests != 2 || suites.Suites[0].Failures != 1 {
		t.Errorf("junit report: %v\n%s", err, data)
	}
	var doc struct {
		Total, Failed int
	}
	data, err = os.ReadFile(js)
	if err != nil || json.Unmarshal(data, &doc) != nil || doc.Total != 2 || doc.Failed != 1 {
		t.Errorf("json report: %v\n%s", err, data)
	}

	stdout, stderr, code = runCLI(t, "", "replay", dir, "--json", "-", "--allow-unused")
	if code != 0 || !json.Valid([]byte(stdout)) || !strings.Contains(stderr, "2 passed") {
		t.Errorf("--json -: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}

// TestReplayView: the README's main command shows the story for people.
func TestReplayView(t *testing.T) {
	stdout, stderr, code := runCLI(t, "", "replay", filepath.Join(libraryDir, "story.yaml"), "--view")
	if code != 0 || stderr != "" {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"What does record and replay give me?", "You were cut off. Please continue.", "3s (virtual)", "truncated", "summary", "with no network and no key"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("the view lacks %q:\n%s", want, stdout)
		}
	}
	if strings.Contains(stdout, "\x1b[") {
		t.Error("colour on a non-terminal")
	}
}

// TestDemoScript keeps docs/examples/demo.yaml in step with the harness:
// its tool call runs (list_files is built in) and the turn ends stop.
func TestDemoScript(t *testing.T) {
	stdout, stderr, code := runCLI(t, `{"cmd":"user","text":"hi"}`+"\n", "--stdio", "--provider", "script", "--script", "../../docs/examples/demo.yaml", "--session-id", "demo")
	if code != 0 || !strings.Contains(stdout, `"type":"tool_end","call_id":"call_1","ok":true`) || !strings.Contains(stdout, `"stop_reason":"stop"`) {
		t.Errorf("exit %d\n%s%s", code, stdout, stderr)
	}
	checkTranscript(t, []byte(stdout+"exit: 0\n"), []byte(`{"cmd":"user","text":"hi"}`+"\n"))
}
