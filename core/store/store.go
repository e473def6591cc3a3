// Package store keeps sessions on disk, per project, in the user's state
// directory, so that --continue can resume the latest one.
//
// Layout under the state directory:
//
//	projects/<hash>/project.txt          the absolute project path, for humans
//	projects/<hash>/index.json           {"latest":"<session id>"}, replaced atomically and durably
//	projects/<hash>/index.next.json      {"latest":"<id>","check":"<16 hex>"}: the newest session started,
//	                                     written before it is durable (see Start)
//	projects/<hash>/sessions/<id>.jsonl  the transcript, one record a line, append-only
//	projects/<hash>/sessions/<id>.lock   flock(2)ed by the session's one writable owner
//	projects/<hash>/sessions/.spare-lock, .spare-transcript
//	                                     empty files the next Start moves into place (spare.go)
//
// <hash> is the first 128 bits of the SHA-256 of the absolute project path,
// in hex.
//
// Every transcript line is a self-checking record:
//
//	{"msg":{...},"crc":"<8 hex digits>"}\n
//
// where crc is the CRC-32C of the msg object's bytes exactly as written
// (files written before the checksum moved to the end hold
// {"crc":"<8 hex digits>","msg":{...}}, read the same). The checksum comes
// last so that a record can be written as its message streams in (Stream):
// an assistant reply goes to the file in pieces while its tokens arrive,
// and only its end and the fsync remain when the reply is complete. A line
// is appended by Append with one write, or by a Stream in several, and
// fsynced before Append or Stream.Commit returns. The last line of a file
// may be torn by a crash (no newline, or bytes that do not check: a record
// cut mid-write, or a reply killed while it streamed); it is dropped when
// the session is continued, and cut off the file so that later appends
// follow the last good record. A bad line with any line after it is
// corruption (ErrCorrupt), never skipped.
//
// A failed append (a short write, ENOSPC, a failed fsync) is undone: the
// file is cut back to its last good record and synced, before Append
// returns its error or, when that cut fails too, before the next append
// writes anything. So no record ever follows a torn one, a reader sees every
// completed record and at most a torn last line (which it drops), and a
// Writer whose disk filled up appends again once there is room.
//
// Ownership is an exclusive, non-blocking flock on the session's lock file,
// held for a Writer's lifetime: a second Create or Continue of the same
// session fails with ErrOwned (also inside one process, since each takes its
// own open file description), and the kernel drops the lock when the owner
// dies, however it dies. Files are opened close-on-exec, so tools the owner
// spawns never inherit the lock.
//
// Start makes a session for a client that waits on it (openmax --stdio
// before hello): it owns and creates the session and names it in
// index.next.json, none of it synced, and publishes it durably (the
// directory entries synced, index.json replaced) in the background. The
// first Append waits for that publication, retrying it if it failed, so a
// record is never acknowledged before its session can be found again after
// a power cut. Until then a crash of the process loses nothing (the kernel
// keeps what was written: Latest finds the session through index.next.json),
// and a power cut loses at most the still empty session, never an older
// one: index.next.json is trusted only when it checks and names a
// transcript that exists, else index.json (always whole) decides.
package store

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/openmax/openmax/internal/flock"
	"github.com/openmax/openmax/internal/safefile"
	"github.com/openmax/openmax/provider"
)

// Errors a caller distinguishes. Returned errors wrap them with details (the
// session, the file) and are matched with errors.Is.
var (
	// ErrNoSession: the project has no session (or not the one named).
	ErrNoSession = errors.New("no session")
	// ErrOwned: another live writer (in this process or another) holds the
	// session.
	ErrOwned = errors.New("session is owned by another writer")
	// ErrCorrupt: an index or transcript file cannot be read or parsed. The
	// error names the file.
	ErrCorrupt = errors.New("session store is corrupt")
)

const (
	indexName   = "index.json"
	nextName    = "index.next.json"
	projectName = "project.txt"
	sessionsDir = "sessions"
	dirPerm     = 0o700
	filePerm    = 0o600
	// maxSmallFile bounds what is read of index.json, index.next.json and
	// project.txt, each a line.
	maxSmallFile = 64 << 10
)

// castagnoli is made on first use, not at init: building it costs a
// quarter of a millisecond that every openmax start (even --version) paid.
var castagnoli = sync.OnceValue(func() *crc32.Table { return crc32.MakeTable(crc32.Castagnoli) })

// StateDir returns openmax's state directory: $XDG_STATE_HOME/openmax, or
// $HOME/.local/state/openmax when XDG_STATE_HOME is unset or not absolute (the
// XDG spec says a relative value is to be ignored). getenv is os.Getenv in
// production.
func StateDir(getenv func(string) string) (string, error) {
	if x := getenv("XDG_STATE_HOME"); x != "" && filepath.IsAbs(x) {
		return filepath.Join(x, "openmax"), nil
	}
	home := getenv("HOME")
	if home == "" {
		return "", errors.New("state directory: neither XDG_STATE_HOME nor HOME is set")
	}
	if !filepath.IsAbs(home) {
		return "", fmt.Errorf("state directory: HOME is not absolute: %q", home)
	}
	return filepath.Join(home, ".local", "state", "openmax"), nil
}

// Store is one project's sessions. It holds no open files; it is safe for
// concurrent use.
type Store struct {
	project string // absolute project path
	dir     string // the project's folder

	// What Open made and nothing has synced yet, synced by every
	// publication before its index names a session: the directories
	// created (outermost first) and whether project.txt was written.
	madeDirs    []string
	madeProject bool
}

// Open returns the store of project (a directory; made absolute, symlinks
// resolved where possible) under stateDir, creating its folder on first use.
func Open(stateDir, project string) (*Store, error) {
	if stateDir == "" {
		return nil, errors.New("open session store: empty state directory")
	}
	abs, err := filepath.Abs(project)
	if err != nil {
		return nil, fmt.Errorf("open session store: project %q: %w", project, err)
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	}
	sum := sha256.Sum256([]byte(abs))
	dir := filepath.Join(stateDir, "projects", hex.EncodeToString(sum[:16]))
	sessions := filepath.Join(dir, sessionsDir)
	made := missingDirs(sessions)
	if err := os.MkdirAll(sessions, dirPerm); err != nil {
		return nil, fmt.Errorf("open session store: %w", err)
	}
	s := &Store{project: abs, dir: dir, madeDirs: made}
	wrote, err := s.writeProjectFile()
	if err != nil {
		return nil, fmt.Errorf("open session store: %w", err)
	}
	s.madeProject = wrote
	return s, nil
}

// missingDirs lists the directories MkdirAll(dir) would create, outermost
// first.
func missingDirs(dir string) []string {
	var missing []string
	for {
		if _, err := os.Lstat(dir); !errors.Is(err, fs.ErrNotExist) {
			break
		}
		missing = append(missing, dir)
		parent := filepath.Dir(dir)
		if parent == dir {
			break
		}
		dir = parent
	}
	slices.Reverse(missing)
	return missing
}

// Project is the absolute project path the store is keyed by.
func (s *Store) Project() string { return s.project }

// Dir is the project's folder in the state directory.
func (s *Store) Dir() string { return s.dir }

// writeProjectFile records the project path next to its sessions, once,
// and reports whether it wrote it. It is written unsynced (the first
// publication syncs it), so a power cut may leave it empty or cut short: a
// prefix of the path is rewritten, not taken for another project.
func (s *Store) writeProjectFile() (bool, error) {
	path := filepath.Join(s.dir, projectName)
	want := s.project + "\n"
	got, err := safefile.ReadFile(path, maxSmallFile)
	switch {
	case err == nil && string(got) == want:
		return false, nil
	case err == nil && !strings.HasPrefix(want, string(got)):
		// A different path with the same 128-bit hash, or a hand-edited file:
		// either way, do not mix two projects' sessions.
		return false, fmt.Errorf("%s names %q, not %q", path, strings.TrimSpace(string(got)), s.project)
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return false, err
	}
	// In place, not renamed into place: the fewest journal updates on the way
	// to hello. A reader meanwhile (another process opening the project for
	// the first time) sees a prefix, accepts it and writes the same bytes.
	return true, safefile.WriteFile(path, []byte(want), filePerm)
}

func (s *Store) indexPath() string { return filepath.Join(s.dir, indexName) }

func (s *Store) transcriptPath(id string) string {
	return filepath.Join(s.dir, sessionsDir, id+".jsonl")
}

func (s *Store) lockPath(id string) string {
	return filepath.Join(s.dir, sessionsDir, id+".lock")
}

// index is index.json.
type index struct {
	Latest string `json:"latest"`
}

// Latest returns the id of the project's latest session: the one most
// recently made by Create or Start. It is ErrNoSession when there is none,
// ErrCorrupt when the index cannot be read.
func (s *Store) Latest() (string, error) {
	if id, ok := s.nextLatest(); ok {
		return id, nil
	}
	return s.indexLatest()
}

// indexLatest is the latest session as index.json, the durable index, names
// it.
func (s *Store) indexLatest() (string, error) {
	path := s.indexPath()
	data, err := safefile.ReadFile(path, maxSmallFile)
	if errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("%w in project %s", ErrNoSession, s.project)
	}
	if err != nil {
		return "", corrupt(path, err)
	}
	var ix index
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&ix); err != nil {
		return "", corrupt(path, err)
	}
	if dec.More() {
		return "", corrupt(path, errors.New("trailing data after the index object"))
	}
	if err := checkID(ix.Latest); err != nil {
		return "", corrupt(path, fmt.Errorf("latest: %w", err))
	}
	return ix.Latest, nil
}

// Create makes a new, empty session and records it, durably, as the
// project's latest. The returned Writer owns it. An id already in use is an
// error (wrapping fs.ErrExist, or ErrOwned while it is held).
func (s *Store) Create(sessionID string) (*Writer, error) {
	w, err := s.create(sessionID)
	if err != nil {
		return nil, err
	}
	if err := s.publish(sessionID); err != nil {
		w.f.Close()
		os.Remove(w.path)
		unlock(w.lock)
		return nil, fmt.Errorf("create session %s: %w", sessionID, err)
	}
	return w, nil
}

// Start is Create for a caller that must not wait for the disk (openmax
// --stdio, whose client waits for hello): it returns once the session is
// owned, its transcript exists and index.next.json names it, with nothing
// synced; the publication Create does (the new directory entries synced,
// index.json replaced) runs in the background. The Writer's first Append
// waits for it and retries it if it failed, returning the error when it
// fails again, so no record is acknowledged before its session is durable;
// Close waits for it too. Errors are Create's, for the steps before it
// returns.
//
// What a crash before the publication ends loses: a killed process,
// nothing (what it wrote stays in the page cache: Latest names the session,
// Continue resumes it, and publishes it in turn); a power cut, at most this
// session, which has no record yet, never an older one (see nextLatest).
func (s *Store) Start(sessionID string) (*Writer, error) {
	w, err := s.create(sessionID)
	if err != nil {
		return nil, err
	}
	w.publishLater(func() error {
		if err := s.publish(sessionID); err != nil {
			return err
		}
		s.makeSpares() // for the next Start
		return nil
	})
	return w, nil
}

// create owns and creates a new, empty transcript and names it in
// index.next.json, syncing nothing.
func (s *Store) create(sessionID string) (*Writer, error) {
	if err := checkID(sessionID); err != nil {
		return nil, fmt.Errorf("create session: %w", err)
	}
	spare := s.takeSpare(spareLock, s.lockPath(sessionID)) // else lock makes it
	lock, err := s.lock(sessionID)
	if spare && errors.Is(err, safefile.ErrNotRegular) {
		// Not the empty file a spare is (a FIFO, say): not ours to use.
		os.Remove(s.lockPath(sessionID))
		lock, err = s.lock(sessionID)
	}
	if err != nil {
		return nil, err
	}
	path := s.transcriptPath(sessionID)
	var f *os.File
	if s.takeSpare(spareTranscript, path) {
		f, _, err = safefile.OpenFile(path, os.O_RDWR|os.O_APPEND, 0)
		if err == nil {
			// Spares are made empty; should one not be, it is ours to empty.
			if fi, serr := f.Stat(); serr != nil || fi.Size() != 0 {
				err = f.Truncate(0)
			}
		} else if errors.Is(err, safefile.ErrNotRegular) {
			os.Remove(path) // as for the lock: made afresh below
		}
	}
	if f == nil && (err == nil || errors.Is(err, safefile.ErrNotRegular)) {
		f, err = os.OpenFile(path, os.O_RDWR|os.O_APPEND|os.O_CREATE|os.O_EXCL, filePerm)
	}
	if err != nil {
		if f != nil {
			f.Close()
			os.Remove(path)
		}
		unlock(lock)
		return nil, fmt.Errorf("create session %s: %w", sessionID, err)
	}
	if err := s.writeNext(sessionID); err != nil {
		f.Close()
		os.Remove(path)
		unlock(lock)
		return nil, fmt.Errorf("create session %s: %w", sessionID, err)
	}
	return &Writer{id: sessionID, path: path, f: f, lock: lock}, nil
}

// Continue takes ownership of an existing session and loads its transcript.
// A torn last record (a crash mid-append) is dropped and cut off the file.
// Errors: ErrOwned while another Writer holds it; ErrNoSession when no such
// session exists; ErrCorrupt, naming the file, when its transcript cannot be
// read, or is missing although the index names it as latest.
func (s *Store) Continue(sessionID string) (*Writer, []provider.Message, error) {
	if err := checkID(sessionID); err != nil {
		return nil, nil, fmt.Errorf("continue session: %w", err)
	}
	path := s.transcriptPath(sessionID)
	missing := func() error {
		if latest, err := s.Latest(); err == nil && latest == sessionID {
			return corrupt(path, errors.New("the index names this session but its transcript is missing"))
		}
		return fmt.Errorf("%w %s in project %s", ErrNoSession, sessionID, s.project)
	}
	// Checked before locking, so asking for an unknown id leaves no lock
	// file behind.
	if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
		return nil, nil, missing()
	}
	lock, err := s.lock(sessionID)
	if err != nil {
		return nil, nil, err
	}
	f, _, err := safefile.OpenFile(path, os.O_RDWR|os.O_APPEND, 0) // never blocks on a FIFO
	if err != nil {
		unlock(lock)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil, missing()
		}
		return nil, nil, corrupt(path, err)
	}
	msgs, size, err := load(f, path)
	if err != nil {
		f.Close()
		unlock(lock)
		return nil, nil, err
	}
	w := &Writer{id: sessionID, path: path, f: f, lock: lock, size: size}
	if s.unpublished(sessionID) {
		// Started by a process that died before publishing it: publish it
		// before the first record this Writer acknowledges.
		w.publishLater(func() error { return s.publish(sessionID) })
	}
	return w, msgs, nil
}

// lock takes the session's lock file, or fails with ErrOwned.
func (s *Store) lock(id string) (*flock.Lock, error) {
	path := s.lockPath(id)
	l, err := flock.Acquire(path, filePerm, 0)
	if errors.Is(err, flock.ErrHeld) {
		return nil, fmt.Errorf("session %s: %w (lock %s)", id, ErrOwned, path)
	}
	if err != nil {
		return nil, fmt.Errorf("lock session %s: %s: %w", id, path, err)
	}
	return l, nil
}

// unlock releases a lock from lock.
func unlock(l *flock.Lock) error { return l.Release() }

// load reads a transcript, drops a torn last record, truncates the file to
// the good records and returns them with the file's new size.
func load(f *os.File, path string) ([]provider.Message, int64, error) {
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, 0, corrupt(path, err)
	}
	var (
		msgs []provider.Message
		good int // bytes of data that are whole, good records
		line = 1
	)
	for rest := data; len(rest) > 0; line++ {
		nl := bytes.IndexByte(rest, '\n')
		if nl < 0 {
			break // the last line has no newline: torn, dropped
		}
		m, err := decodeRecord(rest[:nl])
		if err != nil {
			if len(rest) == nl+1 {
				break // the last line: torn, dropped
			}
			return nil, 0, corrupt(path, fmt.Errorf("line %d: %w", line, err))
		}
		msgs = append(msgs, m)
		good += nl + 1
		rest = rest[nl+1:]
	}
	if good < len(data) {
		if err := f.Truncate(int64(good)); err != nil {
			return nil, 0, fmt.Errorf("drop torn record of %s: %w", path, err)
		}
		if err := f.Sync(); err != nil {
			return nil, 0, fmt.Errorf("drop torn record of %s: %w", path, err)
		}
	}
	return msgs, int64(good), nil
}

// Writer appends to a session it owns. Its methods are safe for concurrent
// use.
type Writer struct {
	id   string
	path string

	mu     sync.Mutex
	f      appendFile // nil once closed
	lock   *flock.Lock
	size   int64        // bytes of good records in the file
	dirty  error        // why the file may hold bytes past size: a failed append not yet undone
	pub    *publication // the session's publication, until it has succeeded
	stream *Stream      // the record being streamed, if any: nothing else is appended meanwhile
}

// appendFile is what a Writer needs of its transcript (an *os.File opened
// O_APPEND); tests put a file that fails on command in its place.
type appendFile interface {
	Write([]byte) (int, error)
	Sync() error
	Truncate(size int64) error
	Close() error
}

// SessionID is the session the Writer owns.
func (w *Writer) SessionID() string { return w.id }

// Path is the session's transcript file.
func (w *Writer) Path() string { return w.path }

// Append writes m as one record and fsyncs it before returning, so a message
// whose event has gone out is on disk. A failed append leaves no trace of m:
// the file is cut back to its last good record (now, or at the start of the
// next Append if the cut fails too), and m is never retried, since after a
// failed fsync the kernel may report the same bytes clean without having
// written them. Once the disk recovers, the next Append succeeds.
func (w *Writer) Append(m provider.Message) error {
	rec, err := encodeRecord(m)
	if err != nil {
		return fmt.Errorf("append to session %s: %w", w.id, err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.ready(); err != nil {
		return fmt.Errorf("append to session %s: %w", w.id, err)
	}
	n, err := w.writeSync(rec)
	if err != nil {
		w.dirty = err
		if rerr := w.repair(); rerr != nil {
			return fmt.Errorf("append to session %s: %w (cutting off the partial record failed too, and is retried before the next append: %v)", w.id, err, rerr)
		}
		return fmt.Errorf("append to session %s: %w", w.id, err)
	}
	w.size += int64(n)
	return nil
}

// ready says whether a record may be written now: the Writer is open, no
// record is streaming, the session is published, and what a failed append
// left is cut off. w.mu is held.
func (w *Writer) ready() error {
	if w.f == nil {
		return errors.New("writer is closed")
	}
	if w.stream != nil {
		return errors.New("a streamed record is still open")
	}
	if err := w.published(); err != nil {
		return err
	}
	if w.dirty != nil {
		if err := w.repair(); err != nil {
			return fmt.Errorf("an earlier append failed (%v) and its partial record cannot be cut off yet: %w", w.dirty, err)
		}
	}
	return nil
}

// repair cuts the file back to its good records and syncs that, undoing
// whatever part of a failed append reached it. Shrinking a file needs no
// free space, so this works on a full disk.
func (w *Writer) repair() error {
	if err := w.f.Truncate(w.size); err != nil {
		return err
	}
	if err := w.f.Sync(); err != nil {
		return err
	}
	w.dirty = nil
	return nil
}

// writeSync writes rec whole and fsyncs the file.
func (w *Writer) writeSync(rec []byte) (int, error) {
	n, err := w.write(rec)
	if err == nil && n != len(rec) {
		err = io.ErrShortWrite
	}
	if err == nil {
		err = w.f.Sync()
	}
	return n, err
}

// splitWrites, when positive, makes write issue records in chunks of that
// many bytes: a test hook that lets a kill land inside a record, as a power
// cut or a write interrupted by the kernel can.
var splitWrites int

// write writes rec, in one write(2) outside tests.
func (w *Writer) write(rec []byte) (int, error) {
	if splitWrites <= 0 {
		return w.f.Write(rec)
	}
	n := 0
	for n < len(rec) {
		m, err := w.f.Write(rec[n:min(len(rec), n+splitWrites)])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// Close closes the transcript and releases ownership. Closing twice is a
// no-op.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f == nil {
		return nil
	}
	if s := w.stream; s != nil {
		// A record still streaming is not kept: cut it off (best effort; a
		// torn last line is dropped when the session is continued anyway).
		s.ended, s.err, w.stream = true, errAborted, nil
		w.f.Truncate(w.size)
	}
	perr := w.published()
	ferr := w.f.Close()
	lerr := unlock(w.lock)
	w.f, w.lock = nil, nil
	if perr != nil {
		return fmt.Errorf("close session %s: %w", w.id, perr)
	}
	if ferr != nil {
		return fmt.Errorf("close session %s: %w", w.id, ferr)
	}
	if lerr != nil {
		return fmt.Errorf("close session %s: release lock: %w", w.id, lerr)
	}
	return nil
}

// ---- records ----

// diskMessage is provider.Message as stored. The tags, not provider's field
// names, are the file format.
type diskMessage struct {
	Role      string         `json:"role"`
	Text      string         `json:"text,omitempty"`
	Thinking  []diskThinking `json:"thinking,omitempty"`
	ToolCalls []diskToolCall `json:"tool_calls,omitempty"`
	CallID    string         `json:"call_id,omitempty"`
	IsError   bool           `json:"is_error,omitempty"`
	Phase     string         `json:"phase,omitempty"`
}

type diskThinking struct {
	Text      string `json:"text,omitempty"`
	Signature string `json:"signature,omitempty"`
}

// diskToolCall keeps Args as a string: the model's raw bytes, which need not
// be valid JSON, preserved exactly.
type diskToolCall struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	Args string `json:"args,omitempty"`
}

const (
	recordHead = `{"msg":`
	recordTail = `,"crc":"` // then the digits and `"}`
	crcDigits  = 8
	// The form files written before the checksum moved to the end hold.
	oldPrefix = `{"crc":"`
	oldMiddle = `","msg":`
)

// toDisk is m as stored.
func toDisk(m provider.Message) diskMessage {
	d := diskMessage{Role: string(m.Role), Text: m.Text, CallID: m.CallID, IsError: m.IsError, Phase: m.Phase}
	for _, t := range m.Thinking {
		d.Thinking = append(d.Thinking, diskThinking(t))
	}
	for _, c := range m.ToolCalls {
		d.ToolCalls = append(d.ToolCalls, diskToolCall{ID: c.ID, Name: c.Name, Args: string(c.Args)})
	}
	return d
}

// marshal encodes v as encoding/json does, without HTML escaping (as the
// text of a streamed record is written) and with no trailing newline. Any
// newline in a string is escaped, so a record is one line.
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

func encodeRecord(m provider.Message) ([]byte, error) {
	body, err := marshal(toDisk(m))
	if err != nil {
		return nil, err
	}
	rec := make([]byte, 0, len(recordHead)+len(body)+len(recordTail)+crcDigits+3)
	rec = append(rec, recordHead...)
	rec = append(rec, body...)
	return appendRecordEnd(rec, crc32.Checksum(body, castagnoli())), nil
}

// appendRecordEnd appends what follows a record's msg object: its
// checksum, the closing brace and the newline.
func appendRecordEnd(rec []byte, crc uint32) []byte {
	rec = append(rec, recordTail...)
	rec = fmt.Appendf(rec, "%08x", crc)
	return append(rec, '"', '}', '\n')
}

// splitRecord returns a record line's msg object and the checksum it
// carries, in either form.
func splitRecord(line []byte) (body, sum []byte, err error) {
	end := len(recordTail) + crcDigits + 2 // the checksum member and `"}`
	switch {
	case bytes.HasPrefix(line, []byte(recordHead)) && len(line) >= len(recordHead)+end &&
		bytes.HasPrefix(line[len(line)-end:], []byte(recordTail)) && bytes.HasSuffix(line, []byte(`"}`)):
		return line[len(recordHead) : len(line)-end], line[len(line)-end+len(recordTail) : len(line)-2], nil
	case bytes.HasPrefix(line, []byte(oldPrefix)) && len(line) > len(oldPrefix)+crcDigits+len(oldMiddle) &&
		bytes.Equal(line[len(oldPrefix)+crcDigits:len(oldPrefix)+crcDigits+len(oldMiddle)], []byte(oldMiddle)) &&
		line[len(line)-1] == '}':
		return line[len(oldPrefix)+crcDigits+len(oldMiddle) : len(line)-1], line[len(oldPrefix) : len(oldPrefix)+crcDigits], nil
	}
	return nil, nil, errors.New("not a transcript record")
}

func decodeRecord(line []byte) (provider.Message, error) {
	body, sum, err := splitRecord(line)
	if err != nil {
		return provider.Message{}, err
	}
	var want [4]byte
	if _, err := hex.Decode(want[:], sum); err != nil {
		return provider.Message{}, fmt.Errorf("bad checksum field: %w", err)
	}
	got := crc32.Checksum(body, castagnoli())
	if got != uint32(want[0])<<24|uint32(want[1])<<16|uint32(want[2])<<8|uint32(want[3]) {
		return provider.Message{}, errors.New("checksum mismatch")
	}
	var d diskMessage
	if err := json.Unmarshal(body, &d); err != nil {
		return provider.Message{}, err
	}
	m := provider.Message{Role: provider.Role(d.Role), Text: d.Text, CallID: d.CallID, IsError: d.IsError, Phase: d.Phase}
	for _, t := range d.Thinking {
		m.Thinking = append(m.Thinking, provider.Thinking(t))
	}
	for _, c := range d.ToolCalls {
		tc := provider.ToolCall{ID: c.ID, Name: c.Name}
		if c.Args != "" {
			tc.Args = json.RawMessage(c.Args)
		}
		m.ToolCalls = append(m.ToolCalls, tc)
	}
	return m, nil
}

// ---- helpers ----

func corrupt(path string, err error) error {
	return fmt.Errorf("%w: %s: %w", ErrCorrupt, path, err)
}

// checkID admits ids that are safe as one file name.
func checkID(id string) error {
	if id == "" {
		return errors.New("empty session id")
	}
	if len(id) > 128 || id[0] == '.' {
		return fmt.Errorf("invalid session id %q", id)
	}
	for _, r := range id {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
		default:
			return fmt.Errorf("invalid session id %q", id)
		}
	}
	return nil
}
