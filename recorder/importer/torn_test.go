package importer_test

import (
	"bytes"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"testing"

	vcr "github.com/dnaeon/go-vcr/v2/cassette"
	"github.com/openmax/openmax/recorder/cassette"
	"github.com/openmax/openmax/recorder/importer"
)

// TestLoadNotesSaysATornSave: a recording whose last save did not reach
// the disk whole (its text cut short, or whole but without the closing
// "..." that confirms it, as an OS crash can leave it) loads as of its
// last complete save, and LoadNotes says so; the same recording whole
// loads with no note.
func TestLoadNotesSaysATornSave(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.yaml")
	a, err := cassette.CreateAppender(path, true)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		it := &cassette.Interaction{
			Request:  vcr.Request{Method: "POST", URL: "http://upstream/v1/chat", Body: `{"n":` + string(rune('0'+i)) + `}`, Headers: http.Header{}, Form: map[string][]string{}},
			Response: vcr.Response{Code: 200, Status: "200 OK", Body: "ok", Headers: http.Header{}},
		}
		b, err := cassette.EncodeInteraction(it)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := a.Append([][]byte{b}, nil, false); err != nil {
			t.Fatal(err)
		}
	}
	whole, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, _, notes, err := importer.LoadNotes(path)
	if err != nil || len(f.Interactions) != 2 || len(notes) != 0 || f.TornSave {
		t.Fatalf("the whole recording: %v, %d interactions, notes %q, torn %v", err, interactions(f), notes, f != nil && f.TornSave)
	}
	// The second save's text reached the disk only in part: followed by
	// zeros (pages never written back) or by nothing (the file ends).
	second := bytes.LastIndex(whole, []byte("\n#..\n"))
	for name, state := range map[string][]byte{
		"zeros after": append(bytes.Clone(whole[:second+30]), make([]byte, 512)...),
		"cut short":   bytes.Clone(whole[:second+30]),
		"no closing":  bytes.Clone(whole[:bytes.LastIndex(whole, []byte("\n...\n"))+1]), // its text whole, but unconfirmed
	} {
		torn := filepath.Join(filepath.Dir(path), "torn.yaml")
		if err := os.WriteFile(torn, state, 0o600); err != nil {
			t.Fatal(err)
		}
		f, _, notes, err = importer.LoadNotes(torn)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(f.Interactions) != 1 || !f.TornSave || !slices.Contains(notes, importer.TornNote) {
			t.Errorf("%s: %d interactions (want the first save's 1), torn %v, notes %q", name, len(f.Interactions), f.TornSave, notes)
		}
	}
}

func interactions(f *cassette.File) int {
	if f == nil {
		return -1
	}
	return len(f.Interactions)
}
