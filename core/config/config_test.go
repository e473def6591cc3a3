package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestTrustAndModeSurviveReopening(t *testing.T) {
	dir := t.TempDir()
	p, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if p.Trusted("/a") || p.Mode("/a") != DefaultMode {
		t.Fatal("a new project must be untrusted and in ask mode")
	}
	if err := p.Trust("/a"); err != nil {
		t.Fatal(err)
	}
	if err := (ModeStore{P: p, Project: "/a"}).SetMode("readonly"); err != nil {
		t.Fatal(err)
	}
	again, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !again.Trusted("/a") || again.Mode("/a") != "readonly" || again.Trusted("/b") {
		t.Errorf("reopened: trusted %v mode %q", again.Trusted("/a"), again.Mode("/a"))
	}
}

func TestSaveFailureLeavesTheModeUnchanged(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cfg")
	p, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	// A file where the directory should be makes every save fail.
	if err := os.WriteFile(dir, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := p.SetMode("/a", "auto"); err == nil {
		t.Fatal("a failed save reported success")
	}
	if p.Mode("/a") != DefaultMode {
		t.Errorf("mode changed to %q after a failed save", p.Mode("/a"))
	}
}

func TestDirAndBadFile(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	if d, _ := Dir(env(map[string]string{"XDG_CONFIG_HOME": "/x", "HOME": "/h"})); d != "/x/openmax" {
		t.Errorf("got %s", d)
	}
	if d, _ := Dir(env(map[string]string{"XDG_CONFIG_HOME": "rel", "HOME": "/h"})); d != "/h/.config/openmax" {
		t.Errorf("got %s", d)
	}
	if _, err := Dir(env(nil)); err == nil {
		t.Error("no HOME accepted")
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "projects.json"), []byte("{nope"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir); err == nil || !strings.Contains(err.Error(), "not valid") {
		t.Errorf("got %v", err)
	}
}
