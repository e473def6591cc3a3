package cassette

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	vcr "github.com/dnaeon/go-vcr/v2/cassette"
	"github.com/openmax/openmax/internal/rapidchecks"
	"pgregory.net/rapid"
)

// splitAlways makes every file read in parts (procs of them at most) until
// the test ends.
func splitAlways(t testing.TB, procs int) {
	oldMin, oldPart, oldProcs := splitMin, splitPart, splitProcs
	splitMin, splitPart, splitProcs = 0, 1, func() int { return procs }
	t.Cleanup(func() { splitMin, splitPart, splitProcs = oldMin, oldPart, oldProcs })
}

// loadBoth loads path in parts and in one pass, failing the test unless
// both give the same file and the same error; it reports whether the parts
// were taken.
func loadBoth(t testing.TB, path string, procs int) (split bool) {
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	fi, err := fh.Stat()
	if err != nil {
		t.Fatal(err)
	}
	oldMin := splitMin
	splitMin = math.MaxInt64
	one, oneErr := Load(path)
	anyOne, _, anyOneErr := ReadAny(path, nil)
	splitMin = oldMin

	splitAlways(t, procs)
	_, _, split = readSplit(fh, fi.Size())
	parts, partsErr := Load(path)
	anyParts, _, anyPartsErr := ReadAny(path, nil)
	if fmt.Sprint(oneErr) != fmt.Sprint(partsErr) || fmt.Sprint(anyOneErr) != fmt.Sprint(anyPartsErr) {
		t.Fatalf("%s: in one pass: %v / %v, in parts: %v / %v", path, oneErr, anyOneErr, partsErr, anyPartsErr)
	}
	if !reflect.DeepEqual(one, parts) {
		t.Fatalf("%s: Load in parts and in one pass differ at %s", path, firstDiff(reflect.ValueOf(parts), reflect.ValueOf(one), "File"))
	}
	if !reflect.DeepEqual(anyOne, anyParts) {
		t.Fatalf("%s: ReadAny in parts and in one pass differ at %s", path, firstDiff(reflect.ValueOf(anyParts), reflect.ValueOf(anyOne), "File"))
	}
	return split
}

// splitFile is a cassette of many interactions whose text is mostly
// within the fast reader's layout, and often looks like the lines a cut
// is made at: items of the list, its key, the document's end.
func splitFile(rt *rapid.T) *File {
	piece := rapid.SampledFrom([]string{"plain text", "\n", "  - request:", "- ", "\ninteractions:\n", "interactions:", "'", "\"", ": ", "#", "...", "ü", "{}", "  ", "data: {\"x\":1}\n\n"})
	text := func(label string) string {
		var b strings.Builder
		for _, p := range rapid.SliceOfN(piece, 0, 8).Draw(rt, label) {
			b.WriteString(p)
		}
		return b.String()
	}
	f := New()
	for i := range rapid.IntRange(1, 24).Draw(rt, "interactions") {
		l := fmt.Sprintf("i%d.", i)
		if rapid.IntRange(0, 9).Draw(rt, l+"random") == 0 {
			f.Interactions = append(f.Interactions, randomFile(rt).Interactions...)
			continue
		}
		it := &Interaction{
			Request:  vcr.Request{Body: text(l + "req"), URL: "http://127.0.0.1:9/v1/x", Method: "POST", Headers: map[string][]string{"Content-Type": {"application/json"}}},
			Response: vcr.Response{Status: "200 OK", Code: 200},
		}
		if rapid.Bool().Draw(rt, l+"stream") {
			s := &Stream{}
			var body strings.Builder
			for j := range rapid.IntRange(0, 5).Draw(rt, l+"chunks") {
				c := Chunk{At: time.Duration(j) * time.Millisecond, Data: text(fmt.Sprintf("%sdata%d", l, j))}
				body.WriteString(c.Data)
				s.Chunks = append(s.Chunks, c)
			}
			it.Response.Body, it.Stream = body.String(), s
		} else {
			it.Response.Body = text(l + "resp")
		}
		f.Interactions = append(f.Interactions, it)
	}
	if rapid.Bool().Draw(rt, "session") {
		f.Session = &Session{SessionID: "s", Seed: 7}
		for i := range rapid.IntRange(0, 5).Draw(rt, "commands") {
			f.Session.Commands = append(f.Session.Commands, Command{Line: text(fmt.Sprintf("line%d", i)), Anchor: Anchor{After: "done", Turn: i}})
		}
	}
	return f
}

// TestRapidSplitReadAgreesWithOnePass: a cassette read in parts, on
// several cores, is the cassette read in one pass, whatever the number of
// parts and wherever the cuts fall.
func TestRapidSplitReadAgreesWithOnePass(t *testing.T) {
	rapidchecks.Use(t, rapidchecks.Pick(200, 50))
	dir := t.TempDir()
	split, all := 0, 0
	rapid.Check(t, func(rt *rapid.T) {
		f := splitFile(rt)
		data, err := f.Marshal()
		if err != nil {
			rt.Fatal(err)
		}
		path := filepath.Join(dir, "c.yaml")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			rt.Fatal(err)
		}
		all++
		one, err := fastRead(bytes.NewReader(data))
		want := err == nil && len(one.Interactions) > 1
		if got := loadBoth(t, path, rapid.IntRange(2, 9).Draw(rt, "procs")); got != want {
			rt.Fatalf("read in parts: %v, want %v (one pass: %v, %d interactions)", got, want, err, len(f.Interactions))
		}
		if want {
			split++
		}
	})
	t.Logf("read in parts: %d of %d cassettes (the others: one interaction, or outside the fast reader's layout)", split, all)
	if split == 0 {
		t.Fatal("no cassette was read in parts")
	}
}

// TestSplitReadsTheLibrary: every cassette of the library reads the same
// in parts as in one pass, and those of several interactions in the layout
// the fast reader takes are read in parts.
func TestSplitReadsTheLibrary(t *testing.T) {
	paths := libraryPaths(t)
	splittable := 0
	for _, path := range paths {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		f, err := fastRead(bytes.NewReader(data))
		want := err == nil && len(f.Interactions) > 1
		if want {
			splittable++
		}
		for _, procs := range []int{2, 3, 8} {
			if split := loadBoth(t, path, procs); split != want {
				t.Errorf("%s, %d cores: read in parts %v, want %v", path, procs, split, want)
			}
		}
	}
	if splittable == 0 {
		t.Fatal("no cassette of several interactions in the fast reader's layout")
	}
}

// TestSplitLeavesOtherShapesToOnePass: documents where a cut at a line
// that looks like an item would read otherwise than one pass does: the
// parts are not taken, and the file reads as one pass reads it.
func TestSplitLeavesOtherShapesToOnePass(t *testing.T) {
	item := func(n int) string {
		return fmt.Sprintf("  - request:\n      body: b%d\n      url: http://x/%d\n      method: POST\n    response:\n      body: r%d\n      status: 200 OK\n      code: 200\n      duration: 0s\n", n, n, n)
	}
	items := item(1) + item(2) + item(3) + item(4)
	for _, tt := range []struct {
		name, doc string
	}{
		{"a top-level literal after the list, holding item lines", "version: 1\ninteractions:\n" + items + "notes: |\n" + items},
		{"the session before the list", "version: 1\nopenmax:\n  session_id: s\n  seed: 1\n  commands: []\ninteractions:\n" + items},
		{"the version after the list", "interactions:\n" + items + "version: 1\n"},
		{"the list twice", "version: 1\ninteractions:\n" + item(1) + item(2) + "interactions:\n" + item(3) + item(4)},
		{"a literal body over item lines", "version: 1\ninteractions:\n  - request:\n      body: |\n        " + strings.ReplaceAll(strings.TrimSuffix(items, "\n"), "\n", "\n        ") + "\n      url: u\n      method: GET\n    response:\n      body: x\n      code: 200\n" + items},
		{"a comment between items", "version: 1\ninteractions:\n" + item(1) + item(2) + "# note\n" + item(3) + item(4)},
		{"text after the document", "version: 1\ninteractions:\n" + items + "...\nmore\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "c.yaml")
			if err := os.WriteFile(path, []byte(tt.doc), 0o600); err != nil {
				t.Fatal(err)
			}
			for _, procs := range []int{2, 3, 4, 8} {
				loadBoth(t, path, procs)
			}
		})
	}
}

// TestSplitRefusesAFileThatChangedSize: parts are taken only when the file
// ends where it did when the cuts were made: one that grew (or shrank) in
// between is read in one pass.
func TestSplitRefusesAFileThatChangedSize(t *testing.T) {
	splitAlways(t, 4)
	f := New()
	for i := range 8 {
		f.Interactions = append(f.Interactions, &Interaction{
			// Long enough that the file is larger than the head read first.
			Request:  vcr.Request{Body: fmt.Sprintf("question %d %s", i, strings.Repeat("x", splitHead/4)), URL: "http://x/", Method: "POST"},
			Response: vcr.Response{Body: fmt.Sprintf("answer %d", i), Status: "200 OK", Code: 200},
		})
	}
	data, err := f.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	size := int64(len(data))
	got, _, ok := readSplit(fh, size)
	if !ok || len(got.Interactions) != 8 {
		t.Fatalf("the whole file: ok %v", ok)
	}
	// The file is longer than its size when the cuts were made: the last
	// part read up to that size could be a valid shorter document.
	last := strings.LastIndex(string(data), "\n  - ") + 1
	if _, _, ok := readSplit(fh, int64(last)); ok {
		t.Fatal("parts taken from a file that grew after its size was read")
	}
	// Shorter than that size (cut back to a valid shorter document): the
	// last part comes up short.
	if err := os.Truncate(path, int64(last)); err != nil {
		t.Fatal(err)
	}
	if _, _, ok := readSplit(fh, size); ok {
		t.Fatal("parts taken from a file that shrank after its size was read")
	}
}

// TestReadsInParts: what the command that loads says about a file's size
// is what readSplit does with it.
func TestReadsInParts(t *testing.T) {
	oldProcs := splitProcs
	t.Cleanup(func() { splitProcs = oldProcs })
	for _, tt := range []struct {
		size  int64
		procs int
		want  bool
	}{
		{splitMin - 1, 2, false},
		{splitMin, 2, true},
		{splitMin, 1, false},
		{64 << 20, 8, true},
	} {
		splitProcs = func() int { return tt.procs }
		if got := ReadsInParts(tt.size); got != tt.want || (splitParts(tt.size) > 1) != tt.want {
			t.Errorf("ReadsInParts(%d) on %d cores = %v, want %v", tt.size, tt.procs, got, tt.want)
		}
	}
}
