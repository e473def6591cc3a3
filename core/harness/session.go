package harness

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"

	"github.com/openmax/openmax/core"
	"github.com/openmax/openmax/core/config"
	"github.com/openmax/openmax/core/stdio"
	"github.com/openmax/openmax/core/store"
	"github.com/openmax/openmax/core/wire"
	"github.com/openmax/openmax/provider"
)

// ErrNoPriorSession reports Config.Continue in a project with no saved
// session (the binary exits 2 on it; other session errors exit 1).
var ErrNoPriorSession = errors.New("no prior session")

// SessionError reports a session that could not be opened or resumed.
type SessionError struct {
	Err     error
	noPrior bool
}

func (e *SessionError) Error() string { return e.Err.Error() }
func (e *SessionError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrNoPriorSession) true for a missing session.
func (e *SessionError) Is(target error) bool { return target == ErrNoPriorSession && e.noPrior }

// opened is a session ready to serve.
type opened struct {
	sess       *core.Session
	transcript *wire.Transcript // set when resumed
	close      func()
}

// openSession opens the session on disk: the project's latest one with
// Continue, else a new one named sid. Without a state directory a new
// session runs in memory, with a warning.
//
// A new session is made with store.Start, not store.Create: hello does not
// wait for the disk. What must be on disk, and before what: a message
// before any event that reports it (the session's Append fsyncs before it
// returns, and the stdio contract, openmax --spec stdio, spells it out for
// turn_refused: "written to disk before this event goes out"), a setting
// before its approval_mode acknowledgement, and for --continue a readable
// index and transcript naming the project's prior session. Nothing asks
// that a new session with no message yet be durable before hello. So
// before hello the session is only owned (its lock), created (its
// transcript, so an id in use still falls back to memory with the warning,
// as before) and named as the latest in a file written without fsync;
// syncing the directories and replacing the durable index run while hello
// goes out, and the session's first Append, which every event about a
// message follows, waits for them. What a crash right after hello loses: if
// the process dies, nothing (--continue resumes the new session, still
// empty); if the machine loses power, at most that empty session
// (--continue then resumes the one before it), never a message whose event
// went out.
func (h *Harness) openSession(sid string) (opened, error) {
	memory := func(why error) (opened, error) {
		fmt.Fprintf(h.deps.Log, "openmax: this session is not saved: %v\n", why)
		sess := core.NewSession(sid)
		if h.cfg.Compact {
			sess.RequestCompaction()
		}
		return opened{sess: sess, close: func() {}}, nil
	}
	fail := func(format string, a ...any) (opened, error) {
		return opened{}, &SessionError{Err: fmt.Errorf(format, a...)}
	}
	dir, err := store.StateDir(h.deps.getenv)
	if err != nil {
		if h.cfg.Continue {
			return fail("--continue: %w", err)
		}
		return memory(err)
	}
	st, err := store.Open(dir, h.project)
	if err != nil {
		if h.cfg.Continue {
			return fail("--continue: %w", err)
		}
		return memory(err)
	}
	if !h.cfg.Continue {
		w, err := st.Start(sid)
		if err != nil {
			return memory(err)
		}
		sess := core.NewSessionFrom(sid, nil, w.Append)
		streamRecords(sess, w)
		h.bindState(sess, w.Path(), false)
		return opened{sess: sess, close: func() { w.Close() }}, nil
	}
	latest, err := st.Latest()
	if errors.Is(err, store.ErrNoSession) {
		return opened{}, &SessionError{Err: fmt.Errorf("--continue: no prior session in %s", h.project), noPrior: true}
	}
	if err != nil {
		return fail("--continue: %w", err)
	}
	w, msgs, err := st.Continue(latest)
	if err != nil {
		return fail("--continue: %w", err)
	}
	tmsgs, truncated := store.Transcript(msgs)
	sess := core.NewSessionFrom(latest, msgs, w.Append)
	streamRecords(sess, w)
	h.bindState(sess, w.Path(), true)
	return opened{
		sess:       sess,
		transcript: &wire.Transcript{Messages: tmsgs, Truncated: truncated},
		close:      func() { w.Close() },
	}, nil
}

// streamRecords makes the session write long replies to w as they stream
// (store.Writer.Stream): a message is still on disk before its
// message_done goes out, but only the reply's last piece and the fsync
// are left for that moment.
func streamRecords(sess *core.Session, w *store.Writer) {
	sess.StreamRecords(func(role provider.Role) (core.RecordStream, error) {
		s, err := w.Stream(role)
		if err != nil {
			return nil, err // not a nil *store.Stream in a non-nil interface
		}
		return s, nil
	})
}

// settings reads whether the project is trusted and binds its saved
// approval mode. Without a readable config directory the project counts as
// untrusted and every approval_mode is refused.
func (h *Harness) settings() (bool, stdio.ModeStore) {
	dir, err := config.Dir(h.deps.getenv)
	var p *config.Projects
	if err == nil {
		p, err = config.Open(dir)
	}
	if err != nil {
		fmt.Fprintf(h.deps.Log, "openmax: %v; the project counts as untrusted\n", err)
		return false, unsavable{err: err}
	}
	return p.Trusted(h.project), config.ModeStore{P: p, Project: h.project}
}

// unsavable is the mode store of a session whose settings cannot be read:
// the default mode, and every approval_mode refused (the contract
// acknowledges a mode only after it is persisted).
type unsavable struct{ err error }

func (unsavable) Mode() string { return config.DefaultMode }

func (u unsavable) SetMode(string) error {
	return fmt.Errorf("the settings cannot be read, so nothing can be saved: %w", u.err)
}

// Unreadable is why the project counts as untrusted: its settings cannot
// be read (stdio refuses approval_mode with it).
func (u unsavable) Unreadable() error { return u.SetMode("") }

// Trust marks the project directory dir (the working directory when
// empty) as trusted in the settings getenv locates, and returns its
// absolute path.
func Trust(dir string, getenv func(string) string) (string, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	if err := humanOnly(getenv); err != nil {
		return "", err
	}
	project, err := projectDir(dir)
	if err != nil {
		return "", err
	}
	cdir, err := config.Dir(getenv)
	if err != nil {
		return "", err
	}
	p, err := config.Open(cdir)
	if err != nil {
		return "", err
	}
	return project, p.Trust(project)
}

// NewSessionID returns a fresh random session id.
func NewSessionID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "s-" + hex.EncodeToString(b[:])
}
