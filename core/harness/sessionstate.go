package harness

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/openmax/openmax/core"
	"github.com/openmax/openmax/internal/safefile"
)

// The session state file keeps, beside a saved session's transcript, what
// the session carries across --continue besides its messages
// (core.SessionState: the budget's scale, and whether schemas_over_budget
// already went out, which the contract allows once per session). It is
// <id>.state.json next to <id>.jsonl, written by the session's one owner
// (who holds the session's lock) by replacing it whole: write a temporary
// file, rename it over. It is advisory: unreadable or missing, the session
// continues with a fresh state (and a line on the log for unreadable).

// maxStateFile bounds what is read of a state file (a few numbers).
const maxStateFile = 64 << 10

// statePath is the state file of the session whose transcript is at
// transcript.
func statePath(transcript string) string {
	return strings.TrimSuffix(transcript, ".jsonl") + ".state.json"
}

// loadState reads the state file at path; a missing file is the zero state.
func loadState(path string) (core.SessionState, error) {
	var st core.SessionState
	data, err := safefile.ReadFile(path, maxStateFile) // never blocks on a FIFO
	if errors.Is(err, fs.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return st, err
	}
	if err := json.Unmarshal(data, &st); err != nil {
		return core.SessionState{}, fmt.Errorf("%s: %w", path, err)
	}
	return st, nil
}

// saveStateTo returns the save function of core.Session.SetState for path.
func saveStateTo(path string) func(core.SessionState) error {
	return func(st core.SessionState) error {
		data, err := json.Marshal(st)
		if err != nil {
			return err
		}
		tmp := path + ".tmp"
		if err := safefile.WriteFile(tmp, data, 0o600); err != nil {
			return err
		}
		return os.Rename(tmp, path)
	}
}

// bindState restores sess's state from the file beside transcript (when
// continuing) and makes that file where later changes go.
func (h *Harness) bindState(sess *core.Session, transcript string, continuing bool) {
	path := statePath(transcript)
	var st core.SessionState
	if continuing {
		var err error
		if st, err = loadState(path); err != nil {
			fmt.Fprintf(h.deps.Log, "openmax: the session's state is unreadable, starting it afresh: %v\n", err)
		}
	}
	sess.SetState(st, saveStateTo(path))
	if h.cfg.Compact {
		sess.RequestCompaction()
	}
}
