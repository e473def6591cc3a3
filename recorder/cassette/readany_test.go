package cassette

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"

	vcr "github.com/dnaeon/go-vcr/v2/cassette"
	"gopkg.in/yaml.v3"
	"pgregory.net/rapid"

	"github.com/openmax/openmax/internal/rapidchecks"
)

// TestRapidReadAnyAgreesWithYAML: ReadAny, which reads a file once, tells
// an openmax cassette from any other recording exactly as a whole yaml.v3
// reading does (an openmax member at the top or on an interaction), and
// returns what yaml.v3 decodes, or refuses what it refuses; anything else
// comes back unchanged for the importer, with the document yaml.v3 read
// when ReadAny had to read it. Some files are put outside the fast
// reader's subset (a comment) so that both ways of reading are drawn.
// Stock go-vcr loads every file.
func TestRapidReadAnyAgreesWithYAML(t *testing.T) {
	rapidchecks.Use(t, rapidchecks.Pick(300, 60))
	dir := t.TempDir()
	rapid.Check(t, func(t *rapid.T) {
		f := randomFile(t)
		if rapid.Bool().Draw(t, "stock") {
			// What stock go-vcr writes: no openmax member anywhere.
			f.Session = nil
			for _, it := range f.Interactions {
				it.Stream = nil
			}
		}
		data, err := f.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		if rapid.Bool().Draw(t, "comment") {
			data = append([]byte("# a comment only yaml.v3 reads\n"), data...)
		}
		path := filepath.Join(dir, "c.yaml")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}

		var root yaml.Node
		if err := yaml.Unmarshal(data, &root); err != nil {
			t.Fatalf("yaml.v3 cannot read what Marshal wrote: %v", err)
		}
		// Stock go-vcr loads what Marshal writes, except a header or
		// form member named "<<", which its YAML reader (yaml.v2) takes
		// for a merge key.
		if !bytes.Contains(data, []byte("<<:")) {
			stock, err := vcr.Load(strings.TrimSuffix(path, ".yaml"))
			if err != nil || len(stock.Interactions) != len(f.Interactions) {
				t.Fatalf("stock go-vcr cannot load what Marshal wrote: %v\n%s", err, data)
			}
		}
		got, other, err := ReadAny(path, nil)
		if !nativeDoc(&root) {
			if err != nil || got != nil || other == nil || !bytes.Equal(other.Data, data) {
				t.Fatalf("a recording without an openmax member: f %v, other %v, err %v", got != nil, other != nil, err)
			}
			return
		}
		want, werr := parseYAML(data)
		if werr == nil {
			werr = want.check()
		}
		if (err == nil) != (werr == nil) {
			t.Fatalf("ReadAny: %v; yaml.v3 and check: %v", err, werr)
		}
		if err != nil {
			if !strings.Contains(err.Error(), "cassette "+path+": ") {
				t.Fatalf("the error does not name the file: %v", err)
			}
			return
		}
		if other != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("ReadAny and yaml.v3 differ at %s", firstDiff(reflect.ValueOf(got), reflect.ValueOf(want), "File"))
		}
	})
}

// TestReadAnyReadsAPipeOnce: a recording given as a pipe (a shell's
// <(...)) is read once, whole: an openmax cassette in the recorder's
// layout, one outside it and another tool's recording all come through.
func TestReadAnyReadsAPipeOnce(t *testing.T) {
	plain, err := os.ReadFile("../../cassettes/openai_plain.yaml")
	if err != nil {
		t.Fatal(err)
	}
	vcrpy := "interactions:\n- request:\n    body: null\n    headers: {}\n    method: GET\n    uri: https://h/\n  response:\n    body: {string: hi}\n    headers: {}\n    status: {code: 200, message: OK}\nversion: 1\n"
	for _, tt := range []struct {
		name, data string
		native     bool
	}{
		{"the recorder's layout", string(plain), true},
		{"a comment at the top", "# edited by hand\n" + string(plain), true},
		{"a vcrpy cassette", vcrpy, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "fifo")
			if err := syscall.Mkfifo(path, 0o600); err != nil {
				t.Skipf("no FIFOs here: %v", err)
			}
			go func() {
				w, err := os.OpenFile(path, os.O_WRONLY, 0)
				if err != nil {
					return
				}
				io.WriteString(w, tt.data)
				w.Close()
			}()
			f, other, err := ReadAny(path, nil)
			switch {
			case err != nil:
				t.Fatal(err)
			case tt.native && (f == nil || f.Session == nil || len(f.Interactions) != 1):
				t.Fatalf("the cassette did not load whole: %+v", f)
			case !tt.native && (other == nil || string(other.Data) != tt.data || other.Doc == nil):
				t.Fatalf("the recording did not come back whole, with its document: %+v", other)
			}
		})
	}
}

// repeatReader is b repeated without end.
type repeatReader struct{ b byte }

func (r repeatReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = r.b
	}
	return len(p), nil
}

// TestFastReadBoundsOneEndlessLine: a line that never ends costs the fast
// reader at most maxLine of memory and reading: one of bytes YAML refuses
// (a sparse file's zeros) is given up on within the first buffer, one of
// text is refused as too large once past maxLine, naming its line.
func TestFastReadBoundsOneEndlessLine(t *testing.T) {
	defer func(n int) { maxLine = n }(maxLine)
	maxLine = 1 << 20
	head := "version: 1\ninteractions:\n  - request:\n      body: '"
	for _, tt := range []struct {
		name string
		fill byte
	}{{"zeros", 0}, {"text", 'x'}} {
		t.Run(tt.name, func(t *testing.T) {
			r := &countReader{r: io.MultiReader(strings.NewReader(head), repeatReader{tt.fill})}
			_, err := fastRead(r)
			switch tt.fill {
			case 0:
				if !errors.Is(err, errUnsupported) || r.n > 2*readBuffer {
					t.Fatalf("%v after reading %d bytes; want it given up on within %d", err, r.n, 2*readBuffer)
				}
			default:
				if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "line 4 is over 1048576 bytes (1 MiB)") || r.n > int64(maxLine)+2*readBuffer {
					t.Fatalf("%v after reading %d bytes; want line 4 refused past %d", err, r.n, maxLine)
				}
			}
		})
	}
}

// TestReadAnyLongLines: a body written on one line longer than the
// reader's buffer loads, whole (in single quotes, or in double quotes
// with escapes); one over MaxLine is refused with ErrTooLarge naming the
// file and the line; one of bytes YAML refuses in a sparse file of 1 GB
// is refused at once as too large to decode whole.
func TestReadAnyLongLines(t *testing.T) {
	defer func(n int) { maxLine = n }(maxLine)
	maxLine = 1 << 20
	write := func(t *testing.T, body string) string {
		f := New()
		it := &Interaction{Stream: &Stream{}}
		it.Request.Method, it.Request.URL, it.Request.Body = "POST", "http://h/v1/chat/completions", body
		f.Interactions = []*Interaction{it}
		data, err := f.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(t.TempDir(), "c.yaml")
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, n := range []int{readBuffer + 1, ownMin * 3, maxLine - 100} {
		body := `{"x":"` + strings.Repeat("y", n) + `"}`
		f, _, err := ReadAny(write(t, body), nil)
		if err != nil || f.Interactions[0].Request.Body != body {
			t.Fatalf("a %d-byte line: %v", n, err)
		}
	}
	// Double-quoted with escapes (a control character every other byte),
	// or with one at the end only.
	for _, body := range []string{strings.Repeat("a\x01", 100<<10), strings.Repeat("b", 300<<10) + "\x01"} {
		p := write(t, body)
		if data, _ := os.ReadFile(p); !bytes.Contains(data, []byte(`body: "`)) {
			t.Fatalf("not double-quoted:\n%.300s", data)
		}
		f, _, err := ReadAny(p, nil)
		if err != nil || f.Interactions[0].Request.Body != body {
			t.Fatalf("a %d-byte body with escapes: %v", len(body), err)
		}
	}
	p := write(t, strings.Repeat("y", maxLine))
	if _, _, err := ReadAny(p, nil); !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), p+": line 4 is over") {
		t.Fatalf("a line over maxLine: %v", err)
	}

	sparse := filepath.Join(t.TempDir(), "line.yaml")
	fh, err := os.Create(sparse)
	if err != nil {
		t.Fatal(err)
	}
	fh.WriteString("version: 1\ninteractions:\n  - request:\n      body: '")
	if err := fh.Truncate(1e9); err != nil {
		t.Fatal(err)
	}
	fh.Close()
	if _, _, err := ReadAny(sparse, nil); !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "the limit is 134217728 (128 MiB) (it is not in the layout openmax writes") {
		t.Fatalf("1 GB of zeros on one line: %v", err)
	}
}
