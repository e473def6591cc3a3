package report

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/openmax/openmax/core/wire/view"
	"github.com/openmax/openmax/internal/golden"
	"github.com/openmax/openmax/provider/clock"
	"github.com/openmax/openmax/recorder/cassette"
	"github.com/openmax/openmax/recorder/edit"
	"github.com/openmax/openmax/recorder/importer"
	"github.com/openmax/openmax/recorder/replay"
	"github.com/openmax/openmax/replay/sweep"
	"github.com/openmax/openmax/replay/tape"
)

// Options configure Build.
type Options struct {
	// Serving is how the replays match requests (Ignore, NoDefaults);
	// Build sets the pacing (instant) and its own OnRequest.
	Serving replay.Options
	// Golden is the folder of golden files of a suite; "" means
	// DIR/../golden/<DIR's name>, as `openmax replay DIR` has it.
	Golden string
	// Sweep, when set, sweeps the cassettes with this replayer (the
	// binary's: `openmax cassette sweep`'s) and SweepOptions, and the
	// report shows the matrix.
	Sweep        sweep.Replayer
	SweepOptions sweep.Options
	// Log receives what loading the cassettes says; nil discards it.
	Log io.Writer
}

// Build reads the cassette or every cassette (*.yaml) of the folder at
// path, replays each through the engine, and for a folder compares each
// transcript with its golden file, then sweeps them when o.Sweep is set.
func Build(ctx context.Context, path string, o Options) (*Site, error) {
	if o.Log == nil {
		o.Log = io.Discard
	}
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	paths := []string{path}
	if fi.IsDir() {
		paths, _ = filepath.Glob(filepath.Join(path, "*.yaml"))
		sort.Strings(paths)
		if len(paths) == 0 {
			return nil, fmt.Errorf("report: no cassettes (*.yaml) in %s", path)
		}
	}
	site := &Site{Format: Format, Title: path}
	files := make([]*cassette.File, len(paths))
	results := make([]*replayed, len(paths))
	for i, p := range paths {
		name := strings.TrimSuffix(filepath.Base(p), filepath.Ext(p))
		c := &Cassette{Name: name, Path: p, Page: "cassettes/" + pageName(name) + ".html", Turns: []*Turn{}}
		site.Cassettes = append(site.Cassettes, c)
		f, converted, notes, err := importer.LoadNotes(p)
		if err != nil {
			return nil, fmt.Errorf("report: %w", err)
		}
		if converted != "" {
			c.Notes = append(c.Notes, importer.Note(p, converted, f))
		}
		c.Notes = append(c.Notes, notes...)
		for _, n := range c.Notes {
			fmt.Fprintf(o.Log, "%s\n", n)
		}
		files[i] = f
		start := time.Now()
		results[i] = replayInto(ctx, c, f, o.Serving)
		results[i].took = time.Since(start)
	}
	if fi.IsDir() {
		site.Suite = suite(path, o.Golden, site.Cassettes, results)
	}
	if o.Sweep != nil {
		cs := make([]sweep.Cassette, len(files))
		for i, f := range files {
			cs[i] = sweep.Cassette{Name: filepath.Base(paths[i]), File: f}
		}
		if site.Sweep, err = sweepSite(ctx, cs, site.Cassettes, o); err != nil {
			return nil, err
		}
	}
	return site, nil
}

// pageName is a name made safe for a file name and a URL.
func pageName(name string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			return r
		}
		return '_'
	}, name)
}

// replayed is what a replay left for the suite.
type replayed struct {
	res  tape.Result
	err  error
	took time.Duration
}

// turnCounter follows the harness's stdout as it is written: a budget
// outside a turn opens one (as the view counts turns), a done closes it.
type turnCounter struct {
	mu     sync.Mutex
	turn   int
	inTurn bool
}

func (t *turnCounter) Write(p []byte) (int, error) {
	for _, l := range bytes.Split(p, []byte("\n")) {
		if len(l) == 0 {
			continue
		}
		var line struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(l, &line) != nil {
			continue
		}
		t.mu.Lock()
		switch {
		case line.Type == "budget" && !t.inTurn:
			t.turn, t.inTurn = t.turn+1, true
		case line.Type == "done":
			t.inTurn = false
		}
		t.mu.Unlock()
	}
	return len(p), nil
}

func (t *turnCounter) now() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.turn
}

// replayInto replays f through the engine and fills c: its turns, each
// with the view of the transcript and the interactions its requests were
// served, the misses, and what did not reproduce.
func replayInto(ctx context.Context, c *Cassette, f *cassette.File, serving replay.Options) *replayed {
	its := make([]*Interaction, len(f.Interactions))
	for i, it := range f.Interactions {
		its[i] = NewInteraction(i, it)
		c.Chunks += its[i].Chunks
	}
	var (
		mu     sync.Mutex
		served = map[int]int{} // interaction → turn
		tc     = &turnCounter{}
	)
	serving.Pace = replay.Pace{Mode: replay.PaceInstant}
	if serving.Clock == nil {
		serving.Clock = clock.Real{}
	}
	serving.OnRequest = func(ev replay.Event) {
		mu.Lock()
		defer mu.Unlock()
		if ev.Interaction >= 0 {
			served[ev.Interaction] = tc.now()
		}
		if m := ev.Miss; m != nil {
			c.Misses = append(c.Misses, Miss{Request: ev.Request, Summary: m.Summary(), Diff: m.Diff})
		}
	}
	r, err := tape.Replay(ctx, f, tape.ReplayOptions{Serving: serving, Tee: tc})
	out := &replayed{res: r, err: err}
	if err != nil {
		c.ReplayError = err.Error()
		c.Unused = its
		return out
	}
	c.Exit = r.Exit
	c.Problems = r.Problems(false)
	var sum []Line
	c.Turns, sum = Transcript(r.Stdout, r.Stdin)
	c.Summary = sum
	for i, it := range its {
		n, ok := served[i]
		if !ok {
			c.Unused = append(c.Unused, it)
			continue
		}
		for len(c.Turns) <= n {
			c.Turns = append(c.Turns, &Turn{Number: len(c.Turns)})
		}
		c.Turns[n].Interactions = append(c.Turns[n].Interactions, it)
	}
	return out
}

// Transcript renders a replay's stdout as `openmax replay --view` does
// (stdin gives each turn its prompt) and cuts it into turns: turn 0 is
// what comes before the first, and the summary is returned apart.
func Transcript(stdout, stdin []byte) (turns []*Turn, summary []Line) {
	var b bytes.Buffer
	view.Render(&b, bytes.NewReader(stdout), view.Options{Color: true, Virtual: true, Stdin: bytes.NewReader(stdin), Width: -1})
	turns = []*Turn{{Number: 0}}
	cur := &turns[0].Transcript
	for _, raw := range strings.Split(strings.TrimRight(b.String(), "\n"), "\n") {
		l := parseANSI(raw)
		text := l.String()
		var n int
		switch {
		case strings.HasPrefix(text, "── summary"):
			cur = &summary
			continue
		case strings.HasPrefix(text, "── turn "):
			if _, err := fmt.Sscanf(text, "── turn %d", &n); err == nil {
				for len(turns) <= n {
					turns = append(turns, &Turn{Number: len(turns)})
				}
				cur = &turns[n].Transcript
				continue
			}
		}
		*cur = append(*cur, l)
	}
	for _, t := range turns {
		t.Transcript = trimBlank(t.Transcript)
		if t.Interactions == nil {
			t.Interactions = []*Interaction{}
		}
	}
	return turns, trimBlank(summary)
}

func trimBlank(ls []Line) []Line {
	for len(ls) > 0 && strings.TrimSpace(ls[len(ls)-1].String()) == "" {
		ls = ls[:len(ls)-1]
	}
	for len(ls) > 0 && strings.TrimSpace(ls[0].String()) == "" {
		ls = ls[1:]
	}
	return ls
}

// suite compares each replay with its golden file.
func suite(dir, goldenDir string, cs []*Cassette, rs []*replayed) *Suite {
	if goldenDir == "" {
		abs, _ := filepath.Abs(dir)
		goldenDir = filepath.Join(filepath.Dir(abs), "golden", filepath.Base(abs))
	}
	s := &Suite{Dir: dir, Golden: goldenDir}
	for i, c := range cs {
		r := rs[i]
		row := Row{Name: c.Name, Page: c.Page, Verdict: Pass, DurationMS: ms(r.took)}
		switch {
		case r.err != nil:
			row.Verdict, row.Reason = Fail, r.err.Error()
		case len(c.Problems) > 0:
			row.Verdict, row.Reason = Fail, "did not reproduce the recording: "+strings.Join(c.Problems, "; ")
		default:
			path := filepath.Join(goldenDir, c.Name+".golden")
			err := golden.File(path, "replay", r.res.Transcript(), false)
			var m *golden.MismatchError
			switch {
			case errors.As(err, &m):
				row.Verdict, row.Reason, row.Diff = Fail, "differs from "+path, m.Diff
			case errors.Is(err, golden.ErrMissing):
				row.Verdict, row.Reason = Unchecked, "no golden file "+path
			case err != nil:
				row.Verdict, row.Reason = Fail, err.Error()
			}
		}
		switch row.Verdict {
		case Pass:
			s.Passed++
		case Fail:
			s.Failed++
		default:
			s.Unchecked++
		}
		s.Rows = append(s.Rows, row)
	}
	return s
}

// sweepSite sweeps the cassettes and arranges the rows as matrices.
func sweepSite(ctx context.Context, cs []sweep.Cassette, pages []*Cassette, o Options) (*Sweep, error) {
	so := o.SweepOptions
	var mu sync.Mutex
	seen := map[[2]string]*Variant{}
	so.OnReplay = func(row sweep.Row, f *cassette.File, res sweep.Result) {
		v := variantOf(row, f, res)
		mu.Lock()
		seen[[2]string{row.Cassette, row.Variant}] = v
		mu.Unlock()
	}
	rep, err := sweep.Run(ctx, cs, o.Sweep, so)
	if err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	kinds := so.Kinds
	if kinds == nil {
		kinds = sweep.Kinds
	}
	s := &Sweep{Page: "sweep/index.html", Variants: len(rep.Rows), Failed: rep.Failed}
	for _, k := range kinds {
		s.Kinds = append(s.Kinds, k.Name)
	}
	byName := map[string]*SweepMatrix{}
	for i, c := range cs {
		m := &SweepMatrix{Cassette: c.Name, Page: pages[i].Page, Interactions: len(c.File.Interactions)}
		for _, k := range s.Kinds {
			row := SweepRow{Kind: k, Cells: make([][]*Variant, m.Interactions)}
			for i := range row.Cells {
				row.Cells[i] = []*Variant{}
			}
			m.Rows = append(m.Rows, row)
		}
		byName[c.Name] = m
		s.Cassettes = append(s.Cassettes, m)
	}
	count := map[string]int{}
	for _, row := range rep.Rows {
		m := byName[row.Cassette]
		v := seen[[2]string{row.Cassette, row.Variant}]
		if v == nil { // it never replayed (the fault could not be injected)
			v = variantOf(row, nil, sweep.Result{})
		}
		v.Stops, v.Retries, v.Exit, v.Failures = row.Stops, row.Retries, row.Exit, row.Failures
		v.Page = fmt.Sprintf("sweep/%s/%d.html", pageName(m.Cassette), count[row.Cassette])
		count[row.Cassette]++
		if row.Variant == sweep.None {
			m.Base = v
			continue
		}
		for k := range m.Rows {
			if m.Rows[k].Kind == row.Kind && v.Interaction >= 0 && v.Interaction < len(m.Rows[k].Cells) {
				m.Rows[k].Cells[v.Interaction] = append(m.Rows[k].Cells[v.Interaction], v)
			}
		}
	}
	return s, nil
}

// variantOf is one replay of a sweep: where its fault was, the view of its
// transcript and the timeline of the interaction its fault was put in.
func variantOf(row sweep.Row, f *cassette.File, res sweep.Result) *Variant {
	v := &Variant{Name: row.Variant, Kind: row.Kind, Interaction: -1}
	if op, err := edit.ParseOp(row.Variant); err == nil {
		switch op.Kind {
		case edit.KindRateLimit, edit.KindServerError:
			v.Interaction, v.Place = op.Before, "before"
		case edit.KindReset:
			v.Interaction, v.Place = op.Interaction, fmt.Sprintf("byte %d", op.Byte)
		default:
			v.Interaction, v.Place = op.Interaction, fmt.Sprintf("chunk %d", op.Chunk)
		}
	}
	if f == nil {
		return v
	}
	if v.Interaction >= 0 && v.Interaction < len(f.Interactions) {
		v.Faulted = NewInteraction(v.Interaction, f.Interactions[v.Interaction])
		v.Faulted.Body = "" // the cassette's page shows the request
	}
	stdin := res.Stdin
	if stdin == nil {
		stdin = sweep.StdinOf(f)
	}
	turns, sum := Transcript(res.Stdout, stdin)
	for _, t := range turns {
		if t.Number > 0 {
			v.Transcript = append(v.Transcript, Line{{Class: "b", Text: fmt.Sprintf("── turn %d", t.Number)}})
		}
		v.Transcript = append(v.Transcript, t.Transcript...)
	}
	if len(sum) > 0 {
		v.Transcript = append(v.Transcript, Line{{Class: "b", Text: "── summary"}})
		v.Transcript = append(v.Transcript, sum...)
	}
	return v
}
