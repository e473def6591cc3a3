package golden

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "a.golden")
	if err := File(path, "got", []byte("x\n"), false); !errors.Is(err, ErrMissing) {
		t.Fatalf("missing golden: %v", err)
	}
	if err := File(path, "got", []byte("one\ntwo\n"), true); err != nil {
		t.Fatal(err)
	}
	if err := File(path, "got", []byte("one\ntwo\n"), false); err != nil {
		t.Fatalf("same bytes: %v", err)
	}
	err := File(path, "replay", []byte("one\nthree\n"), false)
	var m *MismatchError
	if !errors.As(err, &m) || !strings.Contains(m.Diff, "-two\n+three\n") || !strings.Contains(m.Diff, "+++ replay") {
		t.Fatalf("mismatch: %v", err)
	}
}

func TestSectionRewritesOnlyItsSection(t *testing.T) {
	path := filepath.Join(t.TempDir(), "case.txtar")
	orig := "A comment\nkept as is.\n-- steps --\n> {\"cmd\":\"user\"}\n-- transcript --\nold\n-- after --\ntail\n"
	if err := os.WriteFile(path, []byte(orig), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Section(path, "transcript", "got", []byte("old\n"), false); err != nil {
		t.Fatalf("same section: %v", err)
	}
	var m *MismatchError
	if err := Section(path, "transcript", "got", []byte("new\n"), false); !errors.As(err, &m) || m.Section != "transcript" {
		t.Fatalf("mismatch: %v", err)
	}
	if err := Section(path, "transcript", "got", []byte("new\n"), true); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	if want := strings.Replace(orig, "old\n", "new\n", 1); string(data) != want {
		t.Fatalf("after update:\n%s\nwant:\n%s", data, want)
	}
	if err := Section(path, "missing", "got", nil, false); !errors.Is(err, ErrMissing) {
		t.Fatalf("missing section: %v", err)
	}
	if err := Section(path, "added", "got", []byte("x\n"), true); err != nil {
		t.Fatal(err)
	}
	data, _ = os.ReadFile(path)
	if !strings.HasSuffix(string(data), "-- after --\ntail\n-- added --\nx\n") {
		t.Fatalf("added section:\n%s", data)
	}
}
