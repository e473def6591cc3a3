package cassette

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	vcr "github.com/dnaeon/go-vcr/v2/cassette"
	"github.com/openmax/openmax/internal/rapidchecks"
	"gopkg.in/yaml.v3"
)

// write is one write an appender made.
type write struct {
	off int64
	p   []byte
}

// TestHeavyCrashDuringASaveLoadsTheLastCompleteSave saves a cassette step by
// step, without syncing (the way a recorder saves), and at every save
// checks each state an OS crash or a power cut could leave on the disk:
// the save's text there up to any 512-byte sector boundary, and each of
// the save's in-place writes (the line hiding the session before, the
// "#" that joins the text to the document) there or not, in any
// combination, since the page cache writes them back in any order. Each
// in-place write lies within one sector (a disk writes a sector whole).
// Every state loads, through Load, as the cassette before the save or
// after it, session included: a torn save is cut back to the one before
// and never loses an interaction or session a complete save held. The
// states without a torn save load in stock go-vcr too.
func TestHeavyCrashDuringASaveLoadsTheLastCompleteSave(t *testing.T) {
	rapidchecks.HeavyUnderRace(t)
	defer func(n int64) { minAhead = n }(minAhead)
	minAhead = 2 * pageSize
	big := strings.Repeat("data: {\"delta\":\"mañana\"}\n\n", 40) // over a sector
	steps := []appendStep{
		{name: "session alone", session: testSession(1, "")},
		{name: "first interaction", add: []*Interaction{testInteraction(0, "hello\nworld")}, session: testSession(1, "")},
		{name: "small session, in the sector of its end", add: []*Interaction{testInteraction(1, "a")}, session: testSession(1, "")},
		{name: "a session over a sector", add: []*Interaction{testInteraction(2, big)}, session: testSession(8, "out")},
		{name: "a session over a page", session: testSession(30, big)},
		{name: "two at once", add: []*Interaction{testInteraction(3, "é"), testInteraction(4, "")}, session: testSession(31, big)},
		{name: "the session dropped", add: []*Interaction{testInteraction(5, "y")}},
		{name: "a session again", add: []*Interaction{testInteraction(6, big)}, session: testSession(2, "")},
		{name: "the same session", session: testSession(2, "")},
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "c.yaml")
	a, err := CreateAppender(path, true)
	if err != nil {
		t.Fatal(err)
	}
	var writes []write
	a.writeAt = func(f *os.File, p []byte, off int64) (int, error) {
		writes = append(writes, write{off, bytes.Clone(p)})
		return f.WriteAt(p, off)
	}
	var (
		saved  []*Interaction
		before *Session
		states int
		torn   int // states yaml.v3 alone does not read as a complete save
	)
	img := filepath.Join(dir, "crashed.yaml")
	for _, st := range steps {
		prev, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		add := encodeAll(t, st.add)
		writes = nil
		if _, err := a.Append(add, st.session, false); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		after := append(append([]*Interaction(nil), saved...), st.add...)
		text, inPlace := writes[0], writes[1:]
		if len(inPlace) == 0 || len(inPlace) > 2 {
			t.Fatalf("%s: %d writes after the text, want the flips (one or two)", st.name, len(inPlace))
		}
		for _, w := range inPlace {
			if w.off/sectorSize != (w.off+int64(len(w.p))-1)/sectorSize {
				t.Fatalf("%s: the in-place write of %d bytes at %d crosses a sector boundary", st.name, len(w.p), w.off)
			}
		}
		cuts := []int{0, len(text.p)}
		for b := (text.off/sectorSize + 1) * sectorSize; b < text.off+int64(len(text.p)); b += sectorSize {
			cuts = append(cuts, int(b-text.off))
		}
		for _, n := range cuts {
			for mask := range 1 << len(inPlace) {
				state := bytes.Clone(prev)
				apply := func(w write) {
					if end := w.off + int64(len(w.p)); int64(len(state)) < end {
						state = append(state, make([]byte, end-int64(len(state)))...)
					}
					copy(state[w.off:], w.p)
				}
				apply(write{text.off, text.p[:n]})
				for i, w := range inPlace {
					if mask&(1<<i) != 0 {
						apply(w)
					}
				}
				what := fmt.Sprintf("%s: the text there up to %d of %d bytes, in-place writes %b", st.name, n, len(text.p), mask)
				states++
				if err := os.WriteFile(img, state, 0o600); err != nil {
					t.Fatal(err)
				}
				f, err := Load(img)
				if err != nil {
					t.Fatalf("%s: Load: %v\n%s", what, err, state)
				}
				var want []*Interaction
				var wantSess *Session
				switch {
				case reflect.DeepEqual(f.Interactions, saved) && reflect.DeepEqual(f.Session, before):
					want, wantSess = saved, before
				case reflect.DeepEqual(f.Interactions, after) && reflect.DeepEqual(f.Session, st.session):
					want, wantSess = after, st.session
				default:
					t.Fatalf("%s: loads as %d interactions and session %v, neither the cassette before the save (%d, %v) nor after it (%d, %v)\n%s",
						what, len(f.Interactions), f.Session != nil, len(saved), before != nil, len(after), st.session != nil, state)
				}
				if plain, err := parseYAML(state); err != nil || !reflect.DeepEqual(plain.Interactions, want) || !reflect.DeepEqual(plain.Session, wantSess) {
					torn++
					if !f.TornSave {
						t.Fatalf("%s: read back to its last complete save without TornSave set", what)
					}
					continue
				}
				if f.TornSave {
					t.Fatalf("%s: TornSave set on a file read as it is", what)
				}
				var stock vcr.Cassette
				if err := yaml.Unmarshal(state, &stock); err != nil || len(stock.Interactions) != len(want) {
					t.Fatalf("%s: stock go-vcr: %v (%d interactions, want %d)", what, err, len(stock.Interactions), len(want))
				}
			}
		}
		saved, before = after, st.session
	}
	t.Logf("%d states checked, %d of them torn (read back to a complete save)", states, torn)
	if torn == 0 {
		t.Fatal("no state needed cutting back: the test checks nothing it should")
	}
}
