package cassette

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	vcr "github.com/dnaeon/go-vcr/v2/cassette"
	"github.com/openmax/openmax/internal/citest"
	"github.com/openmax/openmax/internal/rapidchecks"
	"gopkg.in/yaml.v3"
)

// appendStep is one save: new interactions, the session to store, and
// whether the appender rewrites the file instead (as the recorder does for
// an interaction that completes before an earlier-started one).
type appendStep struct {
	name    string
	add     []*Interaction
	session *Session
	rewrite bool
	durable bool
	// straddle: the step's one interaction gets a body that ends in
	// blank lines, of the size that would put the session's key line
	// across a page boundary.
	straddle bool
}

func testInteraction(i int, body string) *Interaction {
	return &Interaction{
		Request: vcr.Request{Method: "POST", URL: fmt.Sprintf("http://upstream/v1/%d", i), Body: `{"n":` + fmt.Sprint(i) + `}`,
			Headers: http.Header{"Content-Type": {"application/json"}}, Form: map[string][]string{}},
		Response: vcr.Response{Code: 200, Status: "200 OK", Body: body, Headers: http.Header{"X-N": {fmt.Sprint(i)}}, Duration: time.Duration(i) * time.Millisecond},
		Stream:   &Stream{Start: time.Duration(i) * time.Second, Chunks: []Chunk{{At: time.Millisecond, Data: body}}},
	}
}

// encodeAll is the interactions' texts (EncodeInteraction).
func encodeAll(t *testing.T, its []*Interaction) [][]byte {
	t.Helper()
	var out [][]byte
	for _, it := range its {
		b, err := EncodeInteraction(it)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

func testSession(commands int, output string) *Session {
	s := &Session{SessionID: "s-append", Seed: 42, Tools: []Tool{{Name: "read_file", Schema: `{"type":"object"}`}}}
	for i := range commands {
		s.Commands = append(s.Commands, Command{Line: fmt.Sprintf(`{"cmd":"user","text":"command %d\nsecond line"}`, i), Anchor: Anchor{Turn: i, After: "done"}})
	}
	if output != "" {
		s.ToolResults = []ToolResult{{Name: "read_file", Args: `{"path":"a"}`, OK: true, Output: output}}
	}
	return s
}

// TestHeavyAppendEveryKillLeavesALoadableCassette saves a cassette step by step
// and, at every write the appender makes, checks every state a kill could
// leave (the write not made, or made up to any page boundary in it, which
// is where the kernel can stop a write for a fatal signal): the file loads
// with Parse and with stock go-vcr's reading, and holds every interaction
// saved before the step (and the step's, once its flip is made), and the
// session before or after it. Closed, the file is what Marshal gives.
func TestHeavyAppendEveryKillLeavesALoadableCassette(t *testing.T) {
	rapidchecks.HeavyUnderRace(t)
	big := strings.Repeat("data: {\"delta\":\"mañana, 日本語のテキスト\"}\n\n", 120) // ~6 KB, over a page
	steps := []appendStep{
		{name: "session before any interaction", session: testSession(1, "")},
		{name: "same session re-anchored", session: func() *Session { s := testSession(1, ""); s.Commands[0].Anchor.Nth = 2; return s }()},
		{name: "first interaction", add: []*Interaction{testInteraction(0, "hello\nworld")}, session: testSession(1, ""), durable: true},
		{name: "a large non-ASCII stream", add: []*Interaction{testInteraction(1, big)}, session: testSession(2, ""), durable: true},
		{name: "two at once", add: []*Interaction{testInteraction(2, "é"), testInteraction(3, "")}, session: testSession(3, ""), durable: true},
		{name: "a session over a page", session: testSession(40, big)},
		{name: "a session over a page again", session: testSession(41, big)},
		{name: "rewritten", add: []*Interaction{testInteraction(4, "after a rewrite")}, session: testSession(41, big), rewrite: true},
		{name: "after the rewrite", add: []*Interaction{testInteraction(5, "x")}, session: testSession(42, big), durable: true},
		{name: "the session dropped", add: []*Interaction{testInteraction(6, "y")}, durable: true},
		{name: "no session still", add: []*Interaction{testInteraction(7, strings.Repeat("z", 9000))}, durable: true},
	}
	for i := range 3 {
		steps = append(steps, appendStep{name: fmt.Sprintf("a key line that would cross a page %d", i),
			add: []*Interaction{nil}, session: testSession(1+i, ""), durable: i%2 == 0, straddle: true})
	}
	defer func(n int64) { minAhead = n }(minAhead)
	minAhead = 2 * pageSize // the test reads the whole file at every write
	path := filepath.Join(t.TempDir(), "c.yaml")
	a, err := CreateAppender(path, true)
	if err != nil {
		t.Fatal(err)
	}
	var (
		saved    []*Interaction // in the file before the step
		before   *Session
		after    *Session
		want     []*Interaction // once the step is done
		states   int
		noSess   int
		stepName string
	)
	check := func(data []byte, what string) {
		t.Helper()
		states++
		f, err := Parse(data)
		if err != nil {
			t.Fatalf("%s: %s: Parse: %v\n%s", stepName, what, err, data)
		}
		var stock vcr.Cassette
		if err := yaml.Unmarshal(data, &stock); err != nil {
			t.Fatalf("%s: %s: stock go-vcr: %v", stepName, what, err)
		}
		n := len(f.Interactions)
		if n != len(saved) && n != len(want) || len(stock.Interactions) != n {
			t.Fatalf("%s: %s: %d interactions (stock %d), want %d or %d", stepName, what, n, len(stock.Interactions), len(saved), len(want))
		}
		for i, it := range f.Interactions {
			if !reflect.DeepEqual(it, want[i]) || stock.Interactions[i].Response.Body != want[i].Response.Body {
				t.Fatalf("%s: %s: interaction %d is %+v, want %+v", stepName, what, i, it, want[i])
			}
		}
		switch {
		case f.Session == nil && (before != nil || after != nil):
			noSess++
		case f.Session != nil && !reflect.DeepEqual(f.Session, before) && !reflect.DeepEqual(f.Session, after):
			t.Fatalf("%s: %s: session %+v is neither the one before nor after", stepName, what, f.Session)
		}
	}
	watch := func(fh *os.File, p []byte, off int64) (int, error) {
		cur, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		tears := []int{0, len(p)}
		for b := (off/pageSize + 1) * pageSize; b < off+int64(len(p)); b += pageSize {
			tears = append(tears, int(b-off))
		}
		for _, n := range tears {
			img := bytes.Clone(cur)
			if end := off + int64(n); int64(len(img)) < end {
				img = append(img, make([]byte, end-int64(len(img)))...)
			}
			copy(img[off:], p[:n])
			check(img, fmt.Sprintf("a write of %d bytes at %d stopped after %d", len(p), off, n))
		}
		return fh.WriteAt(p, off)
	}
	a.writeAt = watch
	var items []Text // what the file holds, by span
	for _, st := range steps {
		stepName = st.name
		if st.straddle {
			for n := 1; ; n++ {
				it := testInteraction(len(saved), strings.Repeat("k", n)+"\n\n")
				b, err := EncodeInteraction(it)
				if err != nil {
					t.Fatal(err)
				}
				if off := a.end + int64(len(endLine)+len(b)); off/pageSize != (off+keyWidth-1)/pageSize {
					st.add = []*Interaction{it}
					break
				}
			}
		}
		want = append(append([]*Interaction(nil), saved...), st.add...)
		after = st.session
		add := encodeAll(t, st.add)
		var spans []Span
		if st.rewrite {
			// The items saved before are copied from the file by
			// their spans, the new ones given as text.
			a.writeAt = nil // an atomic rename: the old file or the new
			spans, err = a.Rewrite(append(items, InMemory(add)...), st.session)
			a.writeAt = watch
			items = nil
		} else {
			spans, err = a.Append(add, st.session, st.durable)
		}
		if err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		for _, sp := range spans {
			items = append(items, Text{At: sp})
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		saved, before = want, st.session
		check(data, "after the save")
	}
	t.Logf("%d states checked; %d had no session (a kill between the two flips of a session over a page)", states, noSess)

	last := steps[len(steps)-1].session
	spans, err := a.Close(items, last)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := (&File{Version: FormatVersion, Interactions: want, Session: last}).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(data, plain) {
		t.Errorf("closed, the file is not what Marshal gives:\n%s\n---\n%s", data, plain)
	}
	// Each item reads back from the finished file by its new span.
	for i, sp := range spans {
		text, err := NewAppender(path).ReadItem(Text{At: sp})
		if err != nil {
			t.Fatal(err)
		}
		if it, err := DecodeInteraction(text); err != nil || !reflect.DeepEqual(it, want[i]) {
			t.Errorf("item %d read back by its span: %+v, %v; want %+v", i, it, err, want[i])
		}
	}
}

// TestLiveSessionDecodesToTheSession: the session as the appender writes
// it (parts encoded once and reused) reads back as the session, however it
// changed since the save before.
func TestLiveSessionDecodesToTheSession(t *testing.T) {
	var c sessionCache
	cases := []struct {
		name string
		s    *Session
	}{
		{"empty", &Session{}},
		{"one command", testSession(1, "")},
		{"re-anchored", func() *Session {
			s := testSession(1, "")
			s.Commands[0].Anchor = Anchor{Turn: 1, After: "token", Nth: 3}
			return s
		}()},
		{"more commands and a result", testSession(5, "out\n  indented\n\nblank above")},
		{"refused", func() *Session {
			s := testSession(5, "out")
			s.Commands[2].Refused = true
			s.Commands[4].TooLong = 99
			return s
		}()},
		{"fewer commands", testSession(2, "")},
		{"another seed", func() *Session { s := testSession(2, ""); s.Seed = 7; s.Imported = true; return s }()},
	}
	for _, tc := range cases {
		text, err := c.liveSession(tc.s)
		if err != nil {
			t.Fatal(err)
		}
		f, err := Parse(append([]byte("version: 1\n"), text...))
		if err != nil {
			t.Fatalf("%s: %v\n%s", tc.name, err, text)
		}
		want := tc.s.Clone()
		if want.Commands == nil {
			want.Commands = []Command{}
		}
		if !reflect.DeepEqual(f.Session, want) {
			t.Errorf("%s: reads back %+v, want %+v\n%s", tc.name, f.Session, want, text)
		}
	}
}

// TestAppendCutShortLeavesTheCassetteLoadable: a save that a full disk
// cuts short (its write stops in the middle of a character, then fails)
// reports the failure and leaves the cassette as the save before left it,
// loadable by Load and by stock go-vcr: a torn character past the
// document's end would make both refuse the whole file.
func TestAppendCutShortLeavesTheCassetteLoadable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.yaml")
	a, err := CreateAppender(path, true)
	if err != nil {
		t.Fatal(err)
	}
	first, err := EncodeInteraction(testInteraction(0, "one"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Append([][]byte{first}, testSession(1, ""), true); err != nil {
		t.Fatal(err)
	}
	second, err := EncodeInteraction(testInteraction(1, strings.Repeat("é", 100)))
	if err != nil {
		t.Fatal(err)
	}
	full := errors.New("no space left on device")
	a.writeAt = func(f *os.File, p []byte, off int64) (int, error) {
		cut := bytes.IndexByte(p, 0xC3) + 1 // after the first byte of "é"
		if cut == 0 {
			t.Fatalf("no é in the write %q", p)
		}
		n, _ := f.WriteAt(p[:cut], off)
		return n, full
	}
	if _, err := a.Append([][]byte{second}, testSession(2, ""), true); !errors.Is(err, full) {
		t.Fatalf("Append on a full disk: %v, want the write's error", err)
	}
	f, err := Load(path)
	if err != nil {
		t.Fatalf("the cassette does not load after a failed save: %v", err)
	}
	if len(f.Interactions) != 1 || f.Session == nil || len(f.Session.Commands) != 1 {
		t.Errorf("after a failed save the cassette holds %d interactions and session %+v; want the save before", len(f.Interactions), f.Session)
	}
	if stock, err := vcr.Load(strings.TrimSuffix(path, ".yaml")); err != nil || len(stock.Interactions) != 1 {
		t.Errorf("stock go-vcr: %v", err)
	}
}

// TestReadItemRefusesAFIFO: an item read back from the file at the path
// (after Close) never blocks on a FIFO swapped in there: it is refused.
func TestReadItemRefusesAFIFO(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.yaml")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		citest.SkipOutsideCI(t, "no FIFOs here: "+err.Error())
	}
	_, err := NewAppender(path).ReadItem(Text{At: Span{Off: 0, Len: 10}})
	if err == nil {
		t.Fatal("read an item from a FIFO")
	}
}
