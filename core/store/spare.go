package store

import (
	"os"
	"path/filepath"
)

// Spares: making a file (allocating an inode) is the dearest step of
// starting a session, dearer than every other step before hello together
// (about 0.5 ms each on the ext4 the benchmarks run on, against some 20 µs
// for a rename or a link). So each Start, once its session is published,
// makes the next session's two files ahead of time, empty, under fixed names
// in the sessions folder, and the next Start moves them into place instead
// of making them. Spares are interchangeable and optional: a Start that
// finds none (the project's first session, or another process took them)
// makes its files as before. Their names match neither *.jsonl nor *.lock.
const (
	spareLock       = ".spare-lock"
	spareTranscript = ".spare-transcript"
)

// takeSpare moves the spare file name to dst and reports whether it did. It
// never replaces dst: it claims the spare by renaming it to a name of its
// own (exactly one claimant's rename succeeds), then links the claim to dst,
// which fails when dst exists; the spare then goes back.
func (s *Store) takeSpare(name, dst string) bool {
	spare := filepath.Join(s.dir, sessionsDir, name)
	claim := dst + ".claim"
	if err := os.Rename(spare, claim); err != nil {
		return false // none, or another process took it
	}
	if err := os.Link(claim, dst); err != nil {
		_ = os.Link(claim, spare) // back, unless a new spare is there already
		_ = os.Remove(claim)
		return false
	}
	_ = os.Remove(claim)
	return true
}

// makeSpares makes the spares that are missing, each as a temporary file
// linked to its name (never replacing one another process made). Failing
// costs only the next Start its speed, so errors are dropped.
func (s *Store) makeSpares() {
	dir := filepath.Join(s.dir, sessionsDir)
	for _, name := range []string{spareLock, spareTranscript} {
		spare := filepath.Join(dir, name)
		if _, err := os.Lstat(spare); err == nil {
			continue
		}
		f, err := os.CreateTemp(dir, name+".tmp-*")
		if err != nil {
			return
		}
		f.Close()
		_ = os.Link(f.Name(), spare)
		_ = os.Remove(f.Name())
	}
}
