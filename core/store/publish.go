package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"

	"github.com/openmax/openmax/internal/atomicfile"
	"github.com/openmax/openmax/internal/safefile"
)

// A session is published when a power cut can no longer lose it: every
// directory entry on the way to its transcript is synced, then index.json
// names it (a synced temporary file renamed over the index, the rename
// synced). The order matters: index.json never names a transcript whose
// entry is not yet durable, since Continue reports that as corruption.
//
// Before its publication a started session is found through
// index.next.json, which is written without any sync (it costs no disk
// flush on the way to hello). Latest trusts it only when its check holds
// and the transcript it names exists, so whatever a power cut leaves of it
// (nothing, zeros, a torn record) either names a session that is really
// there or is ignored, and index.json, always whole, decides. The
// publication syncs index.next.json as well, so once a session is published
// a power cut can no longer revert that file to a session started before
// it.

func (s *Store) nextPath() string { return filepath.Join(s.dir, nextName) }

// nextIndex is index.next.json. Check is the FNV-1a hash of Latest, in
// hex: it tells a whole file from what a power cut left of an unsynced one
// (FNV needs no table, so the way to hello builds none).
type nextIndex struct {
	Latest string `json:"latest"`
	Check  string `json:"check"`
}

func idCheck(id string) string {
	h := fnv.New64a()
	h.Write([]byte(id))
	return fmt.Sprintf("%016x", h.Sum64())
}

// nextSize is the size of index.next.json: every version is padded to it
// with spaces, so that replacing one overwrites it in place.
const nextSize = 256

// nextRecord is the content of index.next.json naming id.
func nextRecord(id string) []byte {
	data, _ := json.Marshal(nextIndex{Latest: id, Check: idCheck(id)}) // cannot fail: two strings
	rec := bytes.Repeat([]byte{' '}, nextSize)
	copy(rec, data)
	rec[nextSize-1] = '\n'
	return rec
}

// writeNext names id in index.next.json, syncing nothing. The record is
// overwritten in place with one write(2) of a fixed size: no new inode, no
// rename, so the least journal work on the way to hello. A process dying
// cannot cut a write(2) short, concurrent writers replace the record whole
// (the kernel serialises writes to a file), and whatever a power cut leaves
// fails the check and is ignored (nextLatest).
func (s *Store) writeNext(id string) error {
	f, _, err := safefile.OpenFile(s.nextPath(), os.O_WRONLY|os.O_CREATE, filePerm) // a FIFO would block the open
	if err != nil {
		return err
	}
	_, werr := f.WriteAt(nextRecord(id), 0)
	var terr error
	if fi, err := f.Stat(); err == nil && fi.Size() > nextSize {
		terr = f.Truncate(nextSize) // a longer file from elsewhere
	}
	cerr := f.Close()
	return errors.Join(werr, terr, cerr)
}

// nextLatest is the session index.next.json names, when that file is whole
// and the session's transcript exists; else ok is false and index.json
// decides.
func (s *Store) nextLatest() (id string, ok bool) {
	data, err := safefile.ReadFile(s.nextPath(), maxSmallFile)
	if err != nil {
		return "", false
	}
	var nx nextIndex
	if err := json.Unmarshal(data, &nx); err != nil || checkID(nx.Latest) != nil || nx.Check != idCheck(nx.Latest) {
		return "", false
	}
	if fi, err := os.Lstat(s.transcriptPath(nx.Latest)); err != nil || !fi.Mode().IsRegular() {
		return "", false
	}
	return nx.Latest, true
}

// unpublished reports whether Latest finds id only through index.next.json:
// a session started by a process that died before publishing it.
func (s *Store) unpublished(id string) bool {
	next, ok := s.nextLatest()
	if !ok || next != id {
		return false
	}
	durable, err := s.indexLatest()
	return err != nil || durable != id
}

// publishHook, when set, runs first in every publication and can fail it:
// a test hook.
var publishHook func(id string) error

// publish makes session id durable and records it in index.json.
func (s *Store) publish(id string) error {
	if publishHook != nil {
		if err := publishHook(id); err != nil {
			return err
		}
	}
	// What Open made: project.txt's content, and each new directory's entry
	// in its parent (its own entries are synced below or were synced by
	// this loop).
	if s.madeProject {
		if err := syncFile(filepath.Join(s.dir, projectName)); err != nil {
			return err
		}
	}
	for _, d := range s.madeDirs {
		if err := atomicfile.SyncDir(filepath.Dir(d)); err != nil {
			return err
		}
	}
	// The transcript's entry, before the index can name it.
	if err := atomicfile.SyncDir(filepath.Join(s.dir, sessionsDir)); err != nil {
		return err
	}
	// index.next.json, overwritten in place: its older content must not come
	// back, naming an older session, once index.json names this one.
	if err := syncFile(s.nextPath()); err != nil {
		return err
	}
	data, err := json.Marshal(index{Latest: id})
	if err != nil {
		return err
	}
	return atomicfile.Write(s.indexPath(), append(data, '\n'), filePerm)
}

func syncFile(path string) error {
	f, _, err := safefile.Open(path)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("syncing %s: %w", path, err)
	}
	return nil
}

// publication is a session's publication running in the background.
type publication struct {
	run  func() error
	done chan struct{}
	err  error // run's result, once done is closed
}

// publishLater starts run in the background as w's publication.
func (w *Writer) publishLater(run func() error) {
	p := &publication{run: run, done: make(chan struct{})}
	w.pub = p
	go func() {
		p.err = run()
		close(p.done)
	}()
}

// published waits for w's publication; if it failed, it runs it again, now.
// It returns nil once the session is published, and is then free. w.mu is
// held.
func (w *Writer) published() error {
	p := w.pub
	if p == nil {
		return nil
	}
	<-p.done
	if p.err != nil {
		if err := p.run(); err != nil {
			return fmt.Errorf("the session cannot be made durable (it is not saved yet): %w", err)
		}
	}
	w.pub = nil
	return nil
}
