package config

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openmax/openmax/internal/flock"
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

// TestConcurrentUpdatesAreNeverLost: many writers, each with its own
// Projects opened before any of them saved (a stale copy, as a long-running
// session holds), update their own projects at once; every update survives.
func TestConcurrentUpdatesAreNeverLost(t *testing.T) {
	dir := t.TempDir()
	const n = 20
	ps := make([]*Projects, n)
	for i := range ps {
		p, err := Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		ps[i] = p
	}
	var wg sync.WaitGroup
	errs := make(chan error, 2*n)
	for i, p := range ps {
		wg.Go(func() {
			project := fmt.Sprintf("/p%d", i)
			errs <- p.Trust(project)
			errs <- p.SetMode(project, "readonly")
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	fresh, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		project := fmt.Sprintf("/p%d", i)
		if !fresh.Trusted(project) || fresh.Mode(project) != "readonly" {
			t.Errorf("%s: trusted %v mode %q after concurrent updates", project, fresh.Trusted(project), fresh.Mode(project))
		}
	}
}

// TestStaleWriterKeepsOthersSettings is the lost update of issue 9: a
// session opened the file, another process then set its own project
// readonly and trusted a third; the session saving its own mode must change
// nothing else, and it reads the other project's new mode.
func TestStaleWriterKeepsOthersSettings(t *testing.T) {
	dir := t.TempDir()
	session, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := session.SetMode("/b", "auto"); err != nil {
		t.Fatal(err)
	}
	other, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := other.SetMode("/b", "readonly"); err != nil {
		t.Fatal(err)
	}
	if err := other.Trust("/c"); err != nil {
		t.Fatal(err)
	}
	if got := session.Mode("/b"); got != "readonly" {
		t.Errorf("the session reads /b as %q, a stale copy; want readonly", got)
	}
	if err := (ModeStore{P: session, Project: "/a"}).SetMode("auto"); err != nil {
		t.Fatal(err)
	}
	fresh, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if fresh.Mode("/b") != "readonly" || !fresh.Trusted("/c") || fresh.Mode("/a") != "auto" {
		t.Errorf("after the session saved /a: /b %q, /c trusted %v, /a %q", fresh.Mode("/b"), fresh.Trusted("/c"), fresh.Mode("/a"))
	}
}

// TestUpdateKeepsUnknownKeys: an update rewrites only its own project's
// known keys; whatever else the file holds (a newer version's fields)
// stays.
func TestUpdateKeepsUnknownKeys(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "projects.json")
	in := `{"version":2,"projects":{"/x":{"trusted":true,"note":"keep <me> & this"},"/y":{"trusted":false,"mode":"auto","extra":[1,2]}}}`
	if err := os.WriteFile(path, []byte(in), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.SetMode("/x", "readonly"); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"version": 2.0, "projects": map[string]any{
		"/x": map[string]any{"trusted": true, "mode": "readonly", "note": "keep <me> & this"},
		"/y": map[string]any{"trusted": false, "mode": "auto", "extra": []any{1.0, 2.0}},
	}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("file after SetMode:\n%s", data)
	}
	if info, err := os.Stat(path); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("projects.json mode %v (%v), want 0600", info.Mode().Perm(), err)
	}
}

// TestBadFileIsNeverOverwritten: a projects file that cannot be read or
// parsed is a clear error on Open, and an update from a Projects opened
// before it went bad refuses rather than replace it (and every trust in
// it) with a map holding one project.
func TestBadFileIsNeverOverwritten(t *testing.T) {
	tests := []struct {
		name, content, want string
	}{
		{"truncated", `{"projects":{"/a":{"trusted":tr`, "not valid"},
		{"empty", "", "not a JSON object"},
		{"null", "null", "not a JSON object"},
		{"array", `[{"trusted":true}]`, "not a JSON object"},
		{"projects not an object", `{"projects":["/a"]}`, "projects"},
		{"project not an object", `{"projects":{"/a":true}}`, `project "/a"`},
		{"trusted not a bool", `{"projects":{"/a":{"trusted":"yes"}}}`, `project "/a"`},
		{"trailing data", `{"projects":{}} {"projects":{}}`, "not valid"},
		{"too large", `{"pad":"` + strings.Repeat("x", 1024) + `"}`, "larger than"},
	}
	defer func(max int) { maxFileSize = max }(maxFileSize)
	maxFileSize = 1024
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			p, err := Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, "projects.json")
			if err := os.WriteFile(path, []byte(tt.content), 0o600); err != nil {
				t.Fatal(err)
			}
			if _, err := Open(dir); err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), path) {
				t.Errorf("Open: %v, want an error naming %s and saying %q", err, path, tt.want)
			}
			for _, update := range []func() error{func() error { return p.Trust("/b") }, func() error { return p.SetMode("/b", "auto") }} {
				if err := update(); err == nil || !strings.Contains(err.Error(), "nothing was saved") {
					t.Errorf("update over a bad file: %v", err)
				}
			}
			if data, err := os.ReadFile(path); err != nil || string(data) != tt.content {
				t.Errorf("the bad file was rewritten (%v)", err)
			}
			if p.Trusted("/b") {
				t.Error("a project is trusted by a file that cannot be read")
			}
		})
	}
	t.Run("unreadable", func(t *testing.T) {
		dir := t.TempDir()
		p, err := Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.SetMode("/a", "readonly"); err != nil {
			t.Fatal(err)
		}
		// A directory where the file should be cannot be read, even by root.
		path := filepath.Join(dir, "projects.json")
		if err := os.Rename(path, path+".aside"); err != nil {
			t.Fatal(err)
		}
		if err := os.Mkdir(path, 0o700); err != nil {
			t.Fatal(err)
		}
		if _, err := Open(dir); err == nil || !strings.Contains(err.Error(), "cannot read "+path) {
			t.Errorf("Open: %v", err)
		}
		if err := p.Trust("/b"); err == nil {
			t.Error("an update over an unreadable file succeeded")
		}
		if got := p.Mode("/a"); got != "readonly" {
			t.Errorf("mode %q once the file became unreadable, want the last one read (readonly)", got)
		}
		if entries, err := os.ReadDir(path); err != nil || len(entries) != 0 {
			t.Errorf("the unreadable path changed: %v %v", entries, err)
		}
	})
}

// TestLockHeldTooLong: an update waits for the lock a bounded time, then
// fails saying why, and saves nothing.
func TestLockHeldTooLong(t *testing.T) {
	dir := t.TempDir()
	p, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	held, err := flock.Acquire(filepath.Join(dir, "projects.json.lock"), 0o600, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer func(w time.Duration) { lockWait = w }(lockWait)
	lockWait = 20 * time.Millisecond
	if err := p.Trust("/a"); err == nil || !strings.Contains(err.Error(), "another openmax process has held") {
		t.Errorf("Trust under a held lock: %v", err)
	}
	held.Release()
	if p.Trusted("/a") {
		t.Error("saved without the lock")
	}
	if err := p.Trust("/a"); err != nil || !p.Trusted("/a") {
		t.Errorf("Trust once the lock is free: %v", err)
	}
}

const envHelperDir = "OPENMAX_CONFIG_TEST_DIR"

// TestUpdateHelper is the second process of TestTwoProcesses: it waits for
// "go" on stdin, then trusts and sets the mode of /child0.. /childN-1.
func TestUpdateHelper(t *testing.T) {
	dir := os.Getenv(envHelperDir)
	if dir == "" {
		return
	}
	p, err := Open(dir)
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	fmt.Println("ready")
	if _, err := fmt.Scanln(new(string)); err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	for i := range twoProcessN {
		project := fmt.Sprintf("/child%d", i)
		if err := p.Trust(project); err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		if err := p.SetMode(project, "auto"); err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
	}
	fmt.Println("done")
	os.Exit(0)
}

const twoProcessN = 20

// TestTwoProcesses: this process and a second one update the same file at
// the same time, each its own projects; none of the updates is lost.
func TestTwoProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns a subprocess")
	}
	dir := t.TempDir()
	p, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestUpdateHelper$", "-test.count=1")
	cmd.Env = append(os.Environ(), envHelperDir+"="+dir)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(stdout)
	if !lines.Scan() || lines.Text() != "ready" {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("helper said %q", lines.Text())
	}
	fmt.Fprintln(stdin, "go")
	for i := range twoProcessN {
		project := fmt.Sprintf("/parent%d", i)
		if err := p.Trust(project); err != nil {
			t.Fatal(err)
		}
		if err := p.SetMode(project, "readonly"); err != nil {
			t.Fatal(err)
		}
	}
	var said []string
	for lines.Scan() {
		said = append(said, lines.Text())
	}
	if err := cmd.Wait(); err != nil || len(said) != 1 || said[0] != "done" {
		t.Fatalf("helper: %v, said %q", err, said)
	}
	for i := range twoProcessN {
		for _, who := range []struct{ name, mode string }{{"parent", "readonly"}, {"child", "auto"}} {
			pr, err := p.Get(fmt.Sprintf("/%s%d", who.name, i))
			if err != nil {
				t.Fatal(err)
			}
			if !pr.Trusted || pr.Mode != who.mode {
				t.Errorf("/%s%d: %+v, want trusted and %s", who.name, i, pr, who.mode)
			}
		}
	}
}
