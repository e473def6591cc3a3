package config

import (
	"os"
	"path/filepath"
	"testing"
)

// TestCanonicalProjectKey: a project reached through a symbolic link is
// the same project as its real directory: trusting or setting a mode
// through either is seen through both, and the file keeps one key, the
// real path.
func TestCanonicalProjectKey(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real")
	link := filepath.Join(dir, "link")
	if err := os.Mkdir(real, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	p, err := Open(filepath.Join(dir, "cfg"))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Trust(link); err != nil {
		t.Fatal(err)
	}
	if err := p.SetMode(real, "readonly"); err != nil {
		t.Fatal(err)
	}
	for _, pr := range []string{real, link, link + "/", filepath.Join(link, "..", "link")} {
		if !p.Trusted(pr) || p.Mode(pr) != "readonly" {
			t.Errorf("%s: trusted %v, mode %q", pr, p.Trusted(pr), p.Mode(pr))
		}
	}
	parsed, err := read(p.Path())
	if err != nil {
		t.Fatal(err)
	}
	if len(parsed.typed) != 1 || !parsed.typed[real].Trusted {
		t.Errorf("file keys %v, want only %s", parsed.typed, real)
	}
	// A setting saved under a link before keys were canonical is still read.
	if err := os.WriteFile(p.Path(), []byte(`{"projects":{"`+link+`":{"trusted":true,"mode":"auto"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if !p.Trusted(link) || p.Mode(link) != "auto" {
		t.Errorf("legacy key: trusted %v, mode %q", p.Trusted(link), p.Mode(link))
	}
	if err := p.SetMode(link, "ask"); err != nil || p.Mode(real) != "ask" || !p.Trusted(real) {
		t.Errorf("updating a legacy entry: %v, mode %q, trusted %v", err, p.Mode(real), p.Trusted(real))
	}
}
