package codexscenario

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/openmax/openmax/internal/golden"
	"github.com/openmax/openmax/provider/codex/transcript"
	"github.com/openmax/openmax/replay/appserver"
)

// Recording is a client's Options.Transcript: safe to read while the
// client writes it, and able to wait for a number of lines (the client's
// reader may still record lines after Close returns).
type Recording struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	lines int
	grew  chan struct{} // closed and replaced at every write
}

// Write takes one transcript line (the client writes each whole).
func (r *Recording) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.buf.Write(p)
	r.lines += bytes.Count(p, []byte{'\n'})
	if r.grew != nil {
		close(r.grew)
		r.grew = nil
	}
	return len(p), nil
}

// Bytes returns a copy of what was recorded so far.
func (r *Recording) Bytes() []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return bytes.Clone(r.buf.Bytes())
}

// WaitLines waits until n lines were recorded.
func (r *Recording) WaitLines(ctx context.Context, n int) error {
	for {
		r.mu.Lock()
		if r.lines >= n {
			r.mu.Unlock()
			return nil
		}
		if r.grew == nil {
			r.grew = make(chan struct{})
		}
		grew, have := r.grew, r.lines
		r.mu.Unlock()
		select {
		case <-grew:
		case <-ctx.Done():
			return fmt.Errorf("the client recorded %d transcript lines, want %d: %w", have, n, ctx.Err())
		}
	}
}

// RecordedDir is the working directory a transcript's client sent: the
// cwd of its first thread/start, thread/resume or thread/fork; "" when
// none.
func RecordedDir(recorded []byte) string {
	for _, l := range bytes.Split(recorded, []byte{'\n'}) {
		tl, err := transcript.ParseLine(l)
		if err != nil || tl.Dir != transcript.DirSend {
			continue
		}
		var m struct {
			Params struct {
				Cwd string `json:"cwd"`
			} `json:"params"`
		}
		if json.Unmarshal(tl.Msg, &m) == nil && m.Params.Cwd != "" {
			return m.Params.Cwd
		}
	}
	return ""
}

// CompareTranscripts checks that a replay's client transcript (got, from a
// client working in gotDir) reproduces the recorded one (whose client
// worked in recDir) line for line, after the normalisation the fake
// app-server matches with (replay/appserver's table: request ids,
// TimestampKeys, emails, IgnoredMembers, and the working directory as a
// path prefix). Each direction must be the same sequence of lines. Across
// directions the fake holds back what was recorded after a client line
// until that line comes, but cannot make the client read what it wrote
// before one in time, so a client line may come earlier among the
// app-server's lines than it was recorded, never later.
func CompareTranscripts(recorded, got []byte, recDir, gotDir string) error {
	rec, err := normalisedLines(recorded, recDir)
	if err != nil {
		return fmt.Errorf("the recorded transcript: %w", err)
	}
	rep, err := normalisedLines(got, gotDir)
	if err != nil {
		return fmt.Errorf("the replay's transcript: %w", err)
	}
	var errs []string
	for _, dir := range []string{transcript.DirSend, transcript.DirRecv} {
		a, b := rec.only(dir), rep.only(dir)
		if !slices.Equal(a, b) {
			errs = append(errs, fmt.Sprintf("the %q lines differ:\n%s", dir,
				golden.Diff("recorded", "replayed", []byte(strings.Join(a, "\n")+"\n"), []byte(strings.Join(b, "\n")+"\n"))))
		}
	}
	if len(errs) == 0 {
		rb, gb := rec.recvBeforeSends(), rep.recvBeforeSends()
		for k := range min(len(rb), len(gb)) {
			if gb[k] > rb[k] {
				errs = append(errs, fmt.Sprintf("client line %d came after %d app-server lines in the replay, after %d in the recording",
					k+1, gb[k], rb[k]))
				break
			}
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("the replay's client transcript does not reproduce the recording: %s", strings.Join(errs, "\n"))
	}
	return nil
}

// normLine is one transcript line, its message normalised.
type normLine struct {
	dir string
	msg string
}

type normLines []normLine

func (ls normLines) only(dir string) []string {
	var out []string
	for _, l := range ls {
		if l.dir == dir {
			out = append(out, l.msg)
		}
	}
	return out
}

// recvBeforeSends counts, for each client line, the app-server lines
// before it.
func (ls normLines) recvBeforeSends() []int {
	var out []int
	recv := 0
	for _, l := range ls {
		if l.dir == transcript.DirRecv {
			recv++
		} else {
			out = append(out, recv)
		}
	}
	return out
}

func normalisedLines(lines []byte, dir string) (normLines, error) {
	var out normLines
	for i, l := range bytes.Split(lines, []byte{'\n'}) {
		if len(bytes.TrimSpace(l)) == 0 {
			continue
		}
		tl, err := transcript.ParseLine(l)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", i+1, err)
		}
		dec := json.NewDecoder(bytes.NewReader(tl.Msg))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("line %d: %w", i+1, err)
		}
		b, err := json.Marshal(appserver.Normalised(v, dir, placeholderDir))
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", i+1, err)
		}
		out = append(out, normLine{dir: tl.Dir, msg: string(b)})
	}
	return out, nil
}

// placeholderDir stands for the session's folder in compared lines.
const placeholderDir = "<dir>"
