package store

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/openmax/openmax/provider"
)

func spareInfo(t *testing.T, s *Store, name string) os.FileInfo {
	t.Helper()
	fi, err := os.Lstat(filepath.Join(s.Dir(), sessionsDir, name))
	if err != nil {
		t.Fatalf("spare %s: %v", name, err)
	}
	return fi
}

// TestStartUsesSpares: a published Start leaves spares for the next one,
// which moves them into place (the very files, not copies) and makes new
// ones; the session works as any other.
func TestStartUsesSpares(t *testing.T) {
	s := open(t)
	w, err := s.Start("first")
	if err != nil {
		t.Fatal(err)
	}
	mustClose(t, w) // waits for the publication, which makes the spares
	lock, transcript := spareInfo(t, s, spareLock), spareInfo(t, s, spareTranscript)

	w, err = s.Start("second")
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(s.transcriptPath("second")); err != nil || !os.SameFile(fi, transcript) {
		t.Errorf("the transcript is not the spare (%v)", err)
	}
	if fi, err := os.Stat(s.lockPath("second")); err != nil || !os.SameFile(fi, lock) {
		t.Errorf("the lock file is not the spare (%v)", err)
	}
	if _, _, err := s.Continue("second"); !errors.Is(err, ErrOwned) {
		t.Errorf("Continue of a started session: %v, want ErrOwned", err)
	}
	appendAll(t, w, threeMsgs()...)
	mustClose(t, w)
	if fi := spareInfo(t, s, spareTranscript); os.SameFile(fi, transcript) {
		t.Error("no new spare after the second Start")
	}
	if got, err := s.Latest(); err != nil || got != "second" {
		t.Errorf("Latest = %q, %v", got, err)
	}
	w, msgs := mustContinue(t, s, "second")
	mustClose(t, w)
	equalMsgs(t, msgs, threeMsgs())
	// Nothing but sessions, their locks and the two spares in the folder.
	entries, err := os.ReadDir(filepath.Join(s.Dir(), sessionsDir))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 6 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("sessions folder holds %q, want 2 transcripts, 2 locks, 2 spares", names)
	}
}

// TestSpareNeverReplaces: Start of an id in use fails as Create does and
// leaves that session's files and the spare alone; a spare that is not
// empty is emptied before use.
func TestSpareNeverReplaces(t *testing.T) {
	s := open(t)
	w, err := s.Start("a")
	if err != nil {
		t.Fatal(err)
	}
	appendAll(t, w, threeMsgs()...)
	mustClose(t, w)
	spare := spareInfo(t, s, spareTranscript)

	if _, err := s.Start("a"); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("Start of an id in use: %v, want fs.ErrExist", err)
	}
	w, msgs := mustContinue(t, s, "a")
	mustClose(t, w)
	equalMsgs(t, msgs, threeMsgs())
	if fi := spareInfo(t, s, spareTranscript); !os.SameFile(fi, spare) {
		t.Error("the failed Start used up the spare")
	}

	junk := filepath.Join(s.Dir(), sessionsDir, spareTranscript)
	if err := os.WriteFile(junk, []byte("not empty\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	w, err = s.Start("b")
	if err != nil {
		t.Fatal(err)
	}
	appendAll(t, w, provider.Message{Role: provider.RoleUser, Text: "hi"})
	mustClose(t, w)
	w, msgs = mustContinue(t, s, "b")
	mustClose(t, w)
	equalMsgs(t, msgs, []provider.Message{{Role: provider.RoleUser, Text: "hi"}})
}
