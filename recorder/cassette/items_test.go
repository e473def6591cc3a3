package cassette

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
	"time"

	vcr "github.com/dnaeon/go-vcr/v2/cassette"
)

// itemsFixture is a cassette of three interactions with a session.
func itemsFixture() *File {
	f := New()
	for i, body := range []string{"data: one\n\n", "\ndata: two, with a leading line break\n\n", "plain"} {
		it := &Interaction{}
		it.Request.Method = "POST"
		it.Request.URL = "http://127.0.0.1:9/v1/chat/completions"
		it.Request.Body = `{"n":` + string(rune('0'+i)) + `}`
		it.Response.Code, it.Response.Status, it.Response.Body = 200, "200 OK", body
		it.Stream = &Stream{Start: time.Duration(i) * time.Millisecond, Chunks: []Chunk{{At: time.Millisecond, Data: body}}}
		f.Interactions = append(f.Interactions, it)
	}
	f.Session = &Session{SessionID: "s", Commands: []Command{{Line: `{"cmd":"user","text":"hi"}`}}}
	return f
}

// TestItems: the text of each interaction is the file's own bytes when
// they read back as it, whoever wrote the file, and EncodeInteraction's
// when the file is mid-recording; either way it reads back as the
// interaction.
func TestItems(t *testing.T) {
	f := itemsFixture()
	plain, err := f.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	// Stock go-vcr (yaml.v2) writes the list at the left margin.
	stockPath := filepath.Join(t.TempDir(), "stock")
	sc := vcr.New(stockPath)
	for _, it := range f.Interactions {
		sc.AddInteraction(&vcr.Interaction{Request: it.Request, Response: it.Response})
	}
	if err := sc.Save(); err != nil {
		t.Fatal(err)
	}
	stockData, err := ReadFile(stockPath + ".yaml")
	if err != nil {
		t.Fatal(err)
	}
	// Mid-recording: appended in two saves, the first save's session
	// hidden in the last interaction of the list.
	midPath := filepath.Join(t.TempDir(), "mid.yaml")
	app, err := CreateAppender(midPath, true)
	if err != nil {
		t.Fatal(err)
	}
	var enc [][]byte
	for _, it := range f.Interactions {
		b, err := EncodeInteraction(it)
		if err != nil {
			t.Fatal(err)
		}
		enc = append(enc, b)
	}
	if _, err := app.Append(enc, f.Session, false); err != nil {
		t.Fatal(err)
	}
	more := f.Session.Clone()
	more.Commands = append(more.Commands, Command{Line: `{"cmd":"quit"}`})
	if _, err := app.Append(nil, more, false); err != nil { // a session-only save
		t.Fatal(err)
	}
	app.Abandon()
	mid, err := ReadFile(midPath)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(mid, []byte("    x00000001: |")) {
		t.Fatalf("the mid-recording fixture hides no session:\n%s", mid)
	}
	// A person added a comment to one item.
	edited := bytes.Replace(plain, []byte("    request:\n"), []byte("    # checked by hand\n    request:\n"), 1)

	for _, tt := range []struct {
		name string
		data []byte
		own  bool // every text is the file's own (else: encoded again)
	}{
		{"openmax plain", plain, true},
		{"stock go-vcr", stockData, true},
		{"hand-edited", edited, true},
		{"mid-recording", mid, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g, err := Parse(tt.data)
			if err != nil {
				t.Fatal(err)
			}
			items, err := Items(tt.data, g)
			if err != nil {
				t.Fatal(err)
			}
			if len(items) != len(g.Interactions) {
				t.Fatalf("%d items for %d interactions", len(items), len(g.Interactions))
			}
			for i, it := range items {
				if tt.own && !(bytes.Contains(tt.data, it.Text) && strings.HasPrefix(strings.TrimLeft(string(it.Text), " "), "- ")) {
					t.Errorf("item %d is not the file's own text:\n%s", i, it.Text)
				}
				if bytes.Contains(it.Text, []byte("x00000001")) || bytes.Contains(it.Text, []byte("session_id")) {
					t.Errorf("item %d holds a hidden session:\n%s", i, it.Text)
				}
				if !readsBackAs(it.Text, g.Interactions[i]) {
					t.Errorf("item %d does not read back as its interaction:\n%s", i, it.Text)
				}
			}
			var texts [][]byte
			for _, it := range items {
				texts = append(texts, it.Text)
			}
			out, err := PlainText(texts, g.Session)
			if err != nil {
				t.Fatal(err)
			}
			back, err := Parse(out)
			if err != nil || len(back.Interactions) != len(g.Interactions) {
				t.Fatalf("the items rejoined do not load: %v", err)
			}
		})
	}
}
