package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRecordNeverDestroysACassette runs `openmax record` with every kind of
// mistake against an existing cassette: each is refused with a message
// that names the problem, and the cassette stays byte for byte as it was.
func TestRecordNeverDestroysACassette(t *testing.T) {
	orig, err := os.ReadFile(filepath.Join(libraryDir, "story.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string // after record --cassette KEEP
		code int
		want string
	}{
		{"proxy without upstream", []string{"--proxy"}, 2, "--upstream URL is required"},
		{"proxy with a relative upstream", []string{"--proxy", "--upstream", "api.openai.com"}, 2, "absolute http(s) URL"},
		{"proxy with an extra argument", []string{"--proxy", "--upstream", "http://127.0.0.1:1", "extra"}, 2, `unexpected argument "extra"`},
		{"typo'd flag", []string{"--provider", "echo", "--modle", "x"}, 2, "modle"},
		{"bad flag value", []string{"--provider", "echo", "--max-iterations", "0"}, 2, "--max-iterations"},
		{"bad scrub pattern", []string{"--provider", "echo", "--scrub", "("}, 2, "--scrub"},
		{"bad proxy boolean", []string{"--proxy=maybe"}, 2, "--proxy=maybe"},
		{"proxy with a mode that replays", []string{"--proxy", "--upstream", "http://127.0.0.1:1", "--mode", "missing"}, 2, "does not go with --proxy"},
		{"proxy with passthrough", []string{"--proxy", "--upstream", "http://127.0.0.1:1", "--passthrough", "localhost"}, 2, "does not go with --proxy"},
		{"unknown mode", []string{"--provider", "echo", "--mode", "sometimes"}, 2, `unknown record mode "sometimes"`},
		{"missing API key", []string{"--provider", "openai"}, 2, "OPENAI_API_KEY"},
		{"missing anthropic key", []string{"--provider", "anthropic"}, 2, "ANTHROPIC_API_KEY"},
		{"unknown provider", []string{"--provider", "nope"}, 2, "nope"},
		{"exists, live", []string{"--provider", "echo"}, 1, "already exists"},
		{"exists, proxy", []string{"--proxy", "--upstream", "http://127.0.0.1:1", "--addr", "127.0.0.1:0"}, 1, "already exists"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			keep := filepath.Join(t.TempDir(), "keep.yaml")
			if err := os.WriteFile(keep, orig, 0o644); err != nil {
				t.Fatal(err)
			}
			stdout, stderr, code := runCLI(t, `{"cmd":"user","text":"hi"}`+"\n", append([]string{"record", "--cassette", keep}, tt.args...)...)
			if code != tt.code || !strings.Contains(stderr, tt.want) {
				t.Errorf("exit %d, stderr %q; want exit %d mentioning %q", code, stderr, tt.code, tt.want)
			}
			if stdout != "" {
				t.Errorf("stdout %q, want nothing", stdout)
			}
			got, err := os.ReadFile(keep)
			if err != nil || !bytes.Equal(got, orig) {
				t.Errorf("the cassette changed (%d bytes, was %d): %v", len(got), len(orig), err)
			}
			if entries, _ := os.ReadDir(filepath.Dir(keep)); len(entries) != 1 {
				t.Errorf("left files behind: %v", entries)
			}
		})
	}
}

// TestRecordOverwrite replaces an existing cassette only when asked, and
// records a new file as before.
func TestRecordOverwrite(t *testing.T) {
	dir := t.TempDir()
	keep := filepath.Join(dir, "keep.yaml")
	if err := os.WriteFile(keep, []byte("not a cassette, but mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := runCLI(t, `{"cmd":"user","text":"hi"}`+"\n", "record", "--cassette", keep, "--overwrite", "--provider", "echo", "--session-id", "s"); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	got, _ := os.ReadFile(keep)
	if !strings.Contains(string(got), `{"cmd":"user","text":"hi"}`) {
		t.Fatalf("--overwrite did not record:\n%s", got)
	}
	fresh := filepath.Join(dir, "new.yaml")
	if _, stderr, code := runCLI(t, `{"cmd":"user","text":"hi"}`+"\n", "record", "--cassette", fresh, "--provider", "echo"); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 2 {
		t.Errorf("temporary files left behind: %v", entries)
	}
}
