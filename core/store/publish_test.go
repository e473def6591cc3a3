package store

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openmax/openmax/provider"
)

// setPublishHook installs hook for the test and removes it after.
func setPublishHook(t *testing.T, hook func(id string) error) {
	t.Helper()
	publishHook = hook
	t.Cleanup(func() { publishHook = nil })
}

func mustIndexLatest(t *testing.T, s *Store) string {
	t.Helper()
	id, err := s.indexLatest()
	if err != nil {
		t.Fatalf("index.json: %v", err)
	}
	return id
}

// TestStartPublishesBeforeTheFirstAppend: whatever became of the background
// publication, an Append returns success only once index.json names the
// session, and a failed publication fails the Append and leaves no record.
func TestStartPublishesBeforeTheFirstAppend(t *testing.T) {
	errDisk := errors.New("disk says no")
	for _, tc := range []struct {
		name     string
		failures int // publications that fail before one succeeds
	}{
		{"publication succeeds", 0},
		{"the background publication fails, the append's retry succeeds", 1},
		{"the retry fails too, the next append's succeeds", 2},
		{"three failures", 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := open(t)
			writeSession(t, s, "old", threeMsgs())
			calls := 0 // the hook runs on the publication's goroutine, then under the Writer's lock: never at once
			setPublishHook(t, func(id string) error {
				calls++
				if id != "new" {
					t.Errorf("publishing %q", id)
				}
				if calls <= tc.failures {
					return errDisk
				}
				return nil
			})
			w, err := s.Start("new")
			if err != nil {
				t.Fatal(err)
			}
			if got, err := s.Latest(); err != nil || got != "new" {
				t.Fatalf("Latest right after Start = %q, %v; want new", got, err)
			}
			msg := provider.Message{Role: provider.RoleUser, Text: "first"}
			failed := 0
			for {
				err := w.Append(msg)
				if err == nil {
					break
				}
				if !errors.Is(err, errDisk) {
					t.Fatalf("Append: %v, want the publication's error", err)
				}
				failed++
				// The message was not acknowledged, and is not in the file.
				if got, torn := readRecords(t, w.Path()); len(got) != 0 || torn {
					t.Fatalf("after a failed Append the transcript holds %d records (torn %v)", len(got), torn)
				}
				if failed > tc.failures {
					t.Fatalf("Append failed %d times for %d failed publications", failed, tc.failures)
				}
			}
			// The background run plus one retry per Append.
			if want := max(0, tc.failures-1); failed != want {
				t.Errorf("%d Appends failed, want %d", failed, want)
			}
			if got := mustIndexLatest(t, s); got != "new" {
				t.Errorf("after the first acknowledged Append index.json names %q, want new", got)
			}
			mustClose(t, w)
			w, got := mustContinue(t, s, "new")
			mustClose(t, w)
			equalMsgs(t, got, []provider.Message{msg})
		})
	}
}

// TestStartBeforePublication: while a started session's publication has
// not run, other readers already see it as the latest session and owned,
// the durable index still names the session before it, and Close waits
// for the publication.
func TestStartBeforePublication(t *testing.T) {
	state, project := t.TempDir(), t.TempDir()
	s, err := Open(state, project)
	if err != nil {
		t.Fatal(err)
	}
	writeSession(t, s, "old", threeMsgs())
	release, entered := make(chan struct{}), make(chan struct{})
	setPublishHook(t, func(string) error {
		close(entered)
		<-release
		return nil
	})
	w, err := s.Start("new")
	if err != nil {
		t.Fatal(err)
	}
	<-entered
	other, err := Open(state, project) // as another process would
	if err != nil {
		t.Fatal(err)
	}
	if got, err := other.Latest(); err != nil || got != "new" {
		t.Errorf("Latest before the publication = %q, %v; want new", got, err)
	}
	if got := mustIndexLatest(t, other); got != "old" {
		t.Errorf("index.json before the publication names %q, want old", got)
	}
	if _, _, err := other.Continue("new"); !errors.Is(err, ErrOwned) {
		t.Errorf("Continue of the started session: %v, want ErrOwned", err)
	}
	if _, err := other.Start("new"); !errors.Is(err, ErrOwned) {
		t.Errorf("a second Start of the same id: %v, want ErrOwned", err)
	}
	close(release)
	mustClose(t, w)
	if got := mustIndexLatest(t, other); got != "new" {
		t.Errorf("index.json after Close names %q, want new", got)
	}
	if _, err := s.Start("new"); !errors.Is(err, os.ErrExist) {
		t.Errorf("Start of an id in use: %v, want fs.ErrExist", err)
	}
}

const (
	envStartState   = "OPENMAX_STORE_START_STATE"
	envStartProject = "OPENMAX_STORE_START_PROJECT"
)

// TestStartHelper is the subprocess of TestStartKilledBeforePublication: it
// starts session "new" with its publication held back forever, prints
// "started", and waits to be killed.
func TestStartHelper(t *testing.T) {
	state := os.Getenv(envStartState)
	if state == "" {
		return
	}
	s, err := Open(state, os.Getenv(envStartProject))
	if err != nil {
		fmt.Printf("error %v\n", err)
		os.Exit(1)
	}
	publishHook = func(string) error { select {} }
	if _, err := s.Start("new"); err != nil {
		fmt.Printf("error %v\n", err)
		os.Exit(1)
	}
	fmt.Println("started")
	select {}
}

// TestStartKilledBeforePublication: a process killed after Start returned
// (for openmax, right after hello) and before its publication ran loses
// nothing: the new session is the latest and resumes, empty; resuming it
// publishes it before its first record is acknowledged; the older session
// is untouched.
func TestStartKilledBeforePublication(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns a subprocess")
	}
	state, project := t.TempDir(), t.TempDir()
	s, err := Open(state, project)
	if err != nil {
		t.Fatal(err)
	}
	writeSession(t, s, "old", threeMsgs())

	cmd := exec.Command(os.Args[0], "-test.run=^TestStartHelper$", "-test.count=1")
	cmd.Env = append(os.Environ(), envStartState+"="+state, envStartProject+"="+project)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	cmd.Process.Kill()
	cmd.Wait()
	if line != "started\n" {
		t.Fatalf("helper said %q", line)
	}

	if got := mustIndexLatest(t, s); got != "old" {
		t.Fatalf("index.json names %q: the helper's publication ran", got)
	}
	latest, err := s.Latest()
	if err != nil || latest != "new" {
		t.Fatalf("Latest after the kill = %q, %v; want new", latest, err)
	}
	w, msgs := mustContinue(t, s, latest)
	if len(msgs) != 0 {
		t.Errorf("the killed session holds %d messages", len(msgs))
	}
	appendAll(t, w, provider.Message{Role: provider.RoleUser, Text: "resumed"})
	if got := mustIndexLatest(t, s); got != "new" {
		t.Errorf("after the resumed session's first Append index.json names %q, want new", got)
	}
	mustClose(t, w)
	w, msgs = mustContinue(t, s, "old")
	mustClose(t, w)
	equalMsgs(t, msgs, threeMsgs())
}

// TestNextIndexAfterPowerCut: index.next.json is written without sync, so
// after a power cut it may be gone, empty, cut short, an older version, or
// name a transcript whose entry was lost. Latest then falls back to
// index.json, never reports corruption for it, and never names a session
// that is not there.
func TestNextIndexAfterPowerCut(t *testing.T) {
	whole := string(nextRecord("new"))
	for _, tc := range []struct {
		name       string
		next       *string // index.next.json's content; nil: no file
		transcript bool    // whether new's transcript survived
		want       string
	}{
		{"no file", nil, true, "old"},
		{"empty", ptr(""), true, "old"},
		{"cut short", ptr(whole[:20]), true, "old"},
		{"cut short, padding lost", ptr(strings.TrimRight(whole, " \n")), true, "new"},
		{"zeroed", ptr(strings.Repeat("\x00", len(whole))), true, "old"},
		{"bad check", ptr(`{"latest":"new","check":"0000000000000000"}` + "\n"), true, "old"},
		{"no check", ptr(`{"latest":"new"}` + "\n"), true, "old"},
		{"a bad id with its check", ptr(string(nextRecord("../x"))), true, "old"},
		{"whole, transcript lost", ptr(whole), false, "old"},
		{"whole, transcript there", ptr(whole), true, "new"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := open(t)
			writeSession(t, s, "old", threeMsgs())
			if err := os.Remove(s.nextPath()); err != nil {
				t.Fatal(err)
			}
			if tc.transcript {
				if err := os.WriteFile(s.transcriptPath("new"), nil, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			if tc.next != nil {
				if err := os.WriteFile(s.nextPath(), []byte(*tc.next), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			got, err := s.Latest()
			if err != nil || got != tc.want {
				t.Errorf("Latest = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func ptr(s string) *string { return &s }

// TestProjectFileAfterPowerCut: project.txt is written without sync until a
// session is published, so Open rewrites what a power cut can leave of it
// (nothing, an empty file, a prefix) and still refuses another project's.
func TestProjectFileAfterPowerCut(t *testing.T) {
	for _, tc := range []struct {
		name    string
		content func(project string) string
		wantErr bool
	}{
		{"empty", func(string) string { return "" }, false},
		{"cut short", func(p string) string { return p[:len(p)/2] }, false},
		{"whole", func(p string) string { return p + "\n" }, false},
		{"another project", func(string) string { return "/elsewhere\n" }, true},
		{"this project and more", func(p string) string { return p + "/sub\n" }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			state, project := t.TempDir(), t.TempDir()
			s, err := Open(state, project)
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(s.Dir(), projectName)
			if err := os.WriteFile(path, []byte(tc.content(s.Project())), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err = Open(state, project)
			if tc.wantErr {
				if err == nil {
					t.Fatal("Open accepted another project's folder")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got, _ := os.ReadFile(path); string(got) != s.Project()+"\n" {
				t.Errorf("project.txt = %q after Open", got)
			}
		})
	}
}

// TestOpenRecordsWhatItMade: the directories Open creates and project.txt
// are remembered for the first publication to sync, and nothing when they
// already existed.
func TestOpenRecordsWhatItMade(t *testing.T) {
	state, project := filepath.Join(t.TempDir(), "state"), t.TempDir()
	s, err := Open(state, project)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		state,
		filepath.Join(state, "projects"),
		s.Dir(),
		filepath.Join(s.Dir(), sessionsDir),
	}
	if strings.Join(s.madeDirs, "\n") != strings.Join(want, "\n") || !s.madeProject {
		t.Errorf("first Open made %q (project.txt %v), want %q and project.txt", s.madeDirs, s.madeProject, want)
	}
	again, err := Open(state, project)
	if err != nil {
		t.Fatal(err)
	}
	if len(again.madeDirs) != 0 || again.madeProject {
		t.Errorf("second Open made %q (project.txt %v), want nothing", again.madeDirs, again.madeProject)
	}
}

// TestWriteNextReplacesWhatWasThere: Start's in-place write of
// index.next.json leaves exactly its record, whatever the file held.
func TestWriteNextReplacesWhatWasThere(t *testing.T) {
	for _, tc := range []struct {
		name string
		old  *string
	}{
		{"no file", nil},
		{"an older record", ptr(string(nextRecord("old")))},
		{"a longer file", ptr(strings.Repeat("x", 3*nextSize))},
		{"a shorter file", ptr("{}")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := open(t)
			writeSession(t, s, "old", nil)
			if err := os.Remove(s.nextPath()); err != nil {
				t.Fatal(err)
			}
			if tc.old != nil {
				if err := os.WriteFile(s.nextPath(), []byte(*tc.old), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			setPublishHook(t, func(string) error { return errors.New("held back") })
			w, err := s.Start("new")
			if err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(s.nextPath())
			if err != nil || string(got) != string(nextRecord("new")) {
				t.Errorf("index.next.json = %q, %v; want %q", got, err, nextRecord("new"))
			}
			if id, err := s.Latest(); err != nil || id != "new" {
				t.Errorf("Latest = %q, %v; want new", id, err)
			}
			<-w.pub.done // the held-back publication is over; Close runs it again
			publishHook = nil
			mustClose(t, w)
		})
	}
}
