package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func sum(c byte) string { return strings.Repeat(string(c), 64) }

func TestSourcesRememberExactBytes(t *testing.T) {
	dir := t.TempDir()
	s, err := OpenSources(dir)
	if err != nil {
		t.Fatal(err)
	}
	st := SourceStore{S: s, Project: "/p"}
	if st.Approved("t.sh", sum('a')) {
		t.Fatal("nothing is approved in a new file")
	}
	if err := st.Approve("t.sh", sum('a')); err != nil {
		t.Fatal(err)
	}
	again, err := OpenSources(dir)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		project, path, sum string
		want               bool
	}{
		{"/p", "t.sh", sum('a'), true},
		{"/p", "t.sh", sum('b'), false}, // other bytes
		{"/p", "u.sh", sum('a'), false}, // other file
		{"/q", "t.sh", sum('a'), false}, // other project
	}
	for _, c := range cases {
		if got := again.Approved(c.project, c.path, c.sum); got != c.want {
			t.Errorf("Approved(%s, %s, %.4s…) = %v, want %v", c.project, c.path, c.sum, got, c.want)
		}
	}
	if err := st.Approve("t.sh", "abc"); err == nil {
		t.Error("a short digest was accepted")
	}
}

func TestSourcesKeepABoundedHistory(t *testing.T) {
	s, err := OpenSources(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i <= maxApprovedPerFile; i++ {
		if err := s.Approve("/p", "f", fmt.Sprintf("%064x", i)); err != nil {
			t.Fatal(err)
		}
	}
	if s.Approved("/p", "f", fmt.Sprintf("%064x", 0)) {
		t.Error("the oldest approval was kept past the bound")
	}
	if !s.Approved("/p", "f", fmt.Sprintf("%064x", maxApprovedPerFile)) || !s.Approved("/p", "f", fmt.Sprintf("%064x", 1)) {
		t.Error("a recent approval was lost")
	}
}

func TestSourcesConcurrentApprovalsAreNeverLost(t *testing.T) {
	dir := t.TempDir()
	const writers, each = 4, 8
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// A value of its own per writer, as another process would have.
			s, err := OpenSources(dir)
			if err != nil {
				t.Error(err)
				return
			}
			for i := 0; i < each; i++ {
				if err := s.Approve("/p", fmt.Sprintf("w%d", w), fmt.Sprintf("%064x", i)); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	s, err := OpenSources(dir)
	if err != nil {
		t.Fatal(err)
	}
	for w := 0; w < writers; w++ {
		for i := 0; i < each; i++ {
			if !s.Approved("/p", fmt.Sprintf("w%d", w), fmt.Sprintf("%064x", i)) {
				t.Errorf("writer %d's approval %d was lost", w, i)
			}
		}
	}
}

func TestSourcesBadFileIsNeverOverwritten(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, sourcesName)
	bad := []byte(`{"projects": [`)
	if err := os.WriteFile(path, bad, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenSources(dir); err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("OpenSources on a bad file: %v, want an error naming it", err)
	}
	s := &Sources{path: path, lock: filepath.Join(dir, sourcesLockName)}
	if s.Approved("/p", "f", sum('a')) {
		t.Error("a bad file approved something")
	}
	if err := s.Approve("/p", "f", sum('a')); err == nil || !strings.Contains(err.Error(), "nothing was saved") {
		t.Errorf("Approve over a bad file: %v", err)
	}
	if got, _ := os.ReadFile(path); string(got) != string(bad) {
		t.Errorf("the bad file was rewritten: %q", got)
	}
}

func TestSourcesKeyTheCanonicalProject(t *testing.T) {
	root := t.TempDir()
	real := filepath.Join(root, "real")
	link := filepath.Join(root, "link")
	if err := os.Mkdir(real, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	s, err := OpenSources(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Approve(link, "t.sh", sum('a')); err != nil {
		t.Fatal(err)
	}
	if !s.Approved(real, "t.sh", sum('a')) || !s.Approved(link, "t.sh", sum('a')) {
		t.Error("an approval made through a link does not hold for the real directory")
	}
}
