package importer

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openmax/openmax/recorder"
)

// vcrpyDoc is a vcrpy cassette of n exchanges; extra goes at the top and
// body(i) is each response's body member.
func vcrpyDoc(n int, extra string, body func(i int) string) string {
	var b strings.Builder
	b.WriteString("version: 1\n" + extra + "interactions:\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "- request:\n    method: POST\n    uri: https://api.openai.com/v1/chat/completions\n    body: '{}'\n    headers: {}\n")
		fmt.Fprintf(&b, "  response:\n    status: {code: 200, message: OK}\n    headers: {}\n    body: %s\n", body(i))
	}
	return b.String()
}

// TestAliasExpansionIsBounded: PyYAML writes anchors and aliases for a
// value shared between exchanges, and those import; an alias bomb (one
// large scalar aliased many times) is refused at once, whichever entry
// point reads it.
func TestAliasExpansionIsBounded(t *testing.T) {
	shared := vcrpyDoc(20, "", func(i int) string {
		if i == 0 {
			return "&id001 {string: 'hello'}"
		}
		return "*id001"
	})
	bomb := vcrpyDoc(200, "big: &big '"+strings.Repeat("x", 20000)+"'\n", func(int) string { return "{string: *big}" })
	tests := []struct {
		name string
		doc  string
		ok   bool
	}{
		{"shared values", shared, true},
		{"an alias bomb", bomb, false},
		{"a self-referencing alias", "version: 1\nx: &a [*a]\ninteractions: []\n", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := Import(Auto, []byte(tt.doc))
			if tt.ok {
				if err != nil || len(f.Interactions) != 20 || f.Interactions[19].Response.Body != "hello" {
					t.Fatalf("Import: %v", err)
				}
				return
			}
			if !errors.Is(err, errExpansion) {
				t.Fatalf("Import: %v, want the expansion refused", err)
			}
			if _, err := Detect([]byte(tt.doc)); !errors.Is(err, errExpansion) {
				t.Errorf("Detect: %v, want the expansion refused", err)
			}
			p := filepath.Join(t.TempDir(), "c.yaml")
			os.WriteFile(p, []byte(tt.doc), 0o644)
			if _, _, err := Load(p); !errors.Is(err, errExpansion) || !strings.Contains(err.Error(), "aliases expand it too far") {
				t.Errorf("Load: %v, want the expansion refused", err)
			}
		})
	}
}

// TestGzipBombIsRefused: an imported body that decodes past the limit is
// refused with the interaction named, never decoded whole.
func TestGzipBombIsRefused(t *testing.T) {
	defer func(m int64) { maxDecoded = m }(maxDecoded)
	maxDecoded = 1 << 20
	var zb bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&zb, gzip.BestCompression)
	zw.Write(make([]byte, 4<<20))
	zw.Close()
	doc := vcrpyDoc(1, "", func(int) string {
		return "{string: !!binary '" + base64.StdEncoding.EncodeToString(zb.Bytes()) + "'}"
	})
	doc = strings.Replace(doc, "  response:\n    status: {code: 200, message: OK}\n    headers: {}", "  response:\n    status: {code: 200, message: OK}\n    headers: {Content-Encoding: [gzip]}", 1)
	_, err := Import(VCRPy, []byte(doc))
	if !errors.Is(err, recorder.ErrDecodedTooLarge) || !strings.Contains(err.Error(), "interaction 0: response body") {
		t.Fatalf("Import: %v, want the body refused as too large", err)
	}
}

// TestImportedTimingIsChecked: a go-vcr recording whose duration would
// stall a paced replay for centuries, or is negative, is refused naming
// the interaction and field.
func TestImportedTimingIsChecked(t *testing.T) {
	for _, d := range []string{"2562047h", "-1s"} {
		doc := "version: 1\ninteractions:\n- request: {method: GET, url: 'http://h/v1/models', body: ''}\n  response: {code: 200, status: 200 OK, body: '', duration: " + d + "}\n"
		_, err := Import(GoVCR1, []byte(doc))
		if err == nil || !strings.Contains(err.Error(), "interaction 0: response.duration is ") {
			t.Errorf("duration %s: %v, want it refused", d, err)
		}
	}
}

// TestHostileRecordingsAreBounded: what every command loads through
// (Load) refuses a hostile recording at once with a clear error, whether
// it looks like one of ours or another tool's: one line of 1 GB (a sparse
// file: the fast reader gives up on its first bytes, and it is too large
// to decode whole), nesting past yaml.v3's depth limit in flow or block
// style, and an alias in the recorder's layout.
func TestHostileRecordingsAreBounded(t *testing.T) {
	ours := "version: 1\ninteractions:\n  - request:\n      body: '"
	theirs := "interactions:\n- request:\n    body: '"
	recorded := "version: 1\ninteractions:\n  - request:\n      method: GET\n      url: http://h/\n    response:\n      code: 200\n    openmax:\n      start: 0s\n"
	tests := []struct {
		name   string
		head   string
		sparse int64 // the file's size, zeros after head; 0: head is all
		want   string
	}{
		{"1 GB on one line, our layout", ours, 1e9, "the limit is 134217728 (128 MiB) (it is not in the layout openmax writes"},
		{"1 GB on one line, vcrpy", theirs, 1e9, "the limit is 134217728 (128 MiB) (it is not in the layout openmax writes"},
		{"deep block nesting", "version: 1\ninteractions:\n  - " + strings.Repeat("- ", 20000) + "a\n", 0, "exceeded max depth of 10000"},
		{"deep flow nesting", "version: 1\ninteractions: " + strings.Repeat("[", 20000) + "\n", 0, "exceeded max depth of 10000"},
		{"deep nesting in a session", recorded + "openmax:\n  commands: " + strings.Repeat("{a: ", 20000) + "\n", 0, "exceeded max depth of 10000"},
		{"an alias in our layout", recorded + "openmax:\n  session_id: &s s1\n  seed: *s\n", 0, "a YAML alias (*s)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "c.yaml")
			fh, err := os.Create(p)
			if err != nil {
				t.Fatal(err)
			}
			fh.WriteString(tt.head)
			if tt.sparse > 0 {
				if err := fh.Truncate(tt.sparse); err != nil {
					t.Fatal(err)
				}
			}
			fh.Close()
			_, _, err = Load(p)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), p) {
				t.Fatalf("Load: %v; want an error naming the file and saying %q", err, tt.want)
			}
		})
	}
}
