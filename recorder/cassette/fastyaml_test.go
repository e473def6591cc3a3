package cassette

import (
	"bytes"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	vcr "github.com/dnaeon/go-vcr/v2/cassette"
	"github.com/openmax/openmax/internal/rapidchecks"
	"pgregory.net/rapid"
)

// fastPieces are what the property builds strings from: every character
// class yaml.v3's choice of style turns on (indicators at the start and
// inside, blanks and breaks at either end, quotes, characters it will not
// print raw, several-byte characters, the words and numbers it resolves),
// and pieces of the usual traffic.
var fastPieces = []string{
	"\n", "\r", "\t", " ", "a", "Z", ":", ": ", "- ", "-", "#", " #", "\"", "'", "''", "é", "日本", "😀", "\u00a0", "\u0085",
	"\u2028", "\ufeff", "\x00", "\x7f", "\xff", "|", ">", "!", "&", "*", "?", "%", "@", "`", "{", "}", "[", "]", ",", "---", "...",
	"~", "0", "12", "1.5", "0x1F", "0o7", "0b1", "-3", "+4", ".5", "1e3", "1_000", "2006-01-02", "1:20", "true", "no", "Null", "y",
	"on", "off", "yes", "data: {\"a\":1}\n\n", `{"model":"m","messages":[{"role":"user","content":"it's"}]}`, "\\", "µs",
}

func drawText(t *rapid.T, label string) string {
	return strings.Join(rapid.SliceOfN(rapid.SampledFrom(fastPieces), 0, 8).Draw(t, label), "")
}

func drawValues(t *rapid.T, label string) map[string][]string {
	if rapid.IntRange(0, 5).Draw(t, label+" nil") == 0 {
		return nil
	}
	m := map[string][]string{}
	keys := []string{"Content-Type", "X-Request-Id", "Authorization", "Transfer-Encoding", "Openai-Model", "Y", "No", "x-2", "x-10",
		"x-010", "a1", "a01", "A", "b", "Ünï", "1", "-", "", "Key: v", "k\nv", "on", "X-Ratelimit-Remaining-Tokens"}
	for range rapid.IntRange(0, 5).Draw(t, label+" n") {
		k := rapid.SampledFrom(keys).Draw(t, label+" key")
		if rapid.IntRange(0, 4).Draw(t, label+" drawn key") == 0 {
			k = drawText(t, label+" key text")
		}
		var vs []string
		for range rapid.IntRange(0, 3).Draw(t, label+" values") {
			vs = append(vs, drawText(t, label+" value"))
		}
		m[k] = vs
	}
	return m
}

func drawDuration(t *rapid.T, label string) time.Duration {
	return time.Duration(rapid.Int64().Draw(t, label)) / time.Duration(rapid.SampledFrom([]int64{1, 1000, 1e6, 1e9}).Draw(t, label+" scale"))
}

// TestFastEncodingIsYAMLs: the text EncodeInteraction writes without
// yaml.v3 is byte for byte yaml.v3's (encodeYAML's), for interactions of
// strings drawn from the pieces that decide yaml.v3's styles, header maps
// with keys its order sorts in its own way, and durations of every scale.
func TestFastEncodingIsYAMLs(t *testing.T) {
	rapidchecks.Use(t, rapidchecks.Pick(3000, 500))
	fast := 0
	rapid.Check(t, func(t *rapid.T) {
		it := &Interaction{
			Request: vcr.Request{Body: drawText(t, "request body"), Form: url.Values(drawValues(t, "form")),
				Headers: http.Header(drawValues(t, "request headers")), URL: drawText(t, "url"), Method: drawText(t, "method")},
			Response: vcr.Response{Body: drawText(t, "response body"), Headers: http.Header(drawValues(t, "response headers")),
				Status: drawText(t, "status"), Code: rapid.IntRange(-1, 999).Draw(t, "code"), Duration: drawDuration(t, "duration")},
		}
		if rapid.Bool().Draw(t, "stream") {
			it.Stream = &Stream{Start: drawDuration(t, "start")}
			for range rapid.IntRange(0, 4).Draw(t, "chunks") {
				it.Stream.Chunks = append(it.Stream.Chunks, Chunk{At: drawDuration(t, "at"), Data: drawText(t, "data")})
			}
			if rapid.Bool().Draw(t, "error") {
				it.Stream.Error = &Error{Kind: drawText(t, "kind"), Message: drawText(t, "message"), At: drawDuration(t, "error at")}
			}
		}
		want, err := encodeInteractionYAML(it)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := appendInteraction(nil, it)
		if !ok {
			return // left to yaml.v3: EncodeInteraction writes want
		}
		fast++
		if !bytes.Equal(got, want) {
			t.Fatalf("written without yaml.v3:\n%s\nyaml.v3:\n%s", got, want)
		}
	})
	if fast == 0 {
		t.Fatal("no interaction was written without yaml.v3")
	}
}

// TestFastEncodingOverTheRecordings: every interaction of the repository's
// recordings is written without yaml.v3, and as yaml.v3 writes it.
func TestFastEncodingOverTheRecordings(t *testing.T) {
	var files []string
	for _, pat := range []string{"../../cassettes/*.yaml", "../../cassettes/*/*.yaml", "testdata/*.yaml", "../*/testdata/*.yaml"} {
		m, err := filepath.Glob(pat)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	total, fast := 0, 0
	for _, path := range files {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		f, err := Parse(data)
		if err != nil {
			continue // the hostile and foreign ones
		}
		for i, it := range f.Interactions {
			total++
			want, err := encodeInteractionYAML(it)
			if err != nil {
				t.Fatal(err)
			}
			got, ok := appendInteraction(nil, it)
			if !ok {
				continue
			}
			fast++
			if !bytes.Equal(got, want) {
				t.Fatalf("%s, interaction %d, written without yaml.v3:\n%s\nyaml.v3:\n%s", path, i, got, want)
			}
		}
	}
	t.Logf("%d of %d interactions in %d files written without yaml.v3", fast, total, len(files))
	if total < 50 || fast*10 < total*9 {
		t.Fatalf("only %d of %d interactions written without yaml.v3", fast, total)
	}
}

// TestFastSessionItemsAreYAMLs: the text a session's command or tool
// result gets without yaml.v3 is byte for byte yaml.v3's, for strings
// drawn from the pieces that decide its styles and numbers of every size.
func TestFastSessionItemsAreYAMLs(t *testing.T) {
	rapidchecks.Use(t, rapidchecks.Pick(3000, 500))
	var fast [2]int
	rapid.Check(t, func(t *rapid.T) {
		n := func(label string) int {
			return rapid.SampledFrom([]int{0, 0, 1, -1, 7, 1 << 31, -1 << 40}).Draw(t, label)
		}
		c := Command{Line: drawText(t, "line"), TooLong: int64(n("too long")), Refused: rapid.Bool().Draw(t, "refused"),
			AfterLines: n("after lines"), Anchor: Anchor{Turn: n("turn"), After: drawText(t, "after"), Nth: n("nth")}}
		r := ToolResult{Name: drawText(t, "name"), Args: drawText(t, "args"), OK: rapid.Bool().Draw(t, "ok"), Output: drawText(t, "output")}
		if sameItem(t, c, "commands") {
			fast[0]++
		}
		if sameItem(t, r, "tool_results") {
			fast[1]++
		}
	})
	if fast[0] == 0 || fast[1] == 0 {
		t.Fatalf("written without yaml.v3: %d commands, %d tool results", fast[0], fast[1])
	}
}

// sameItem fails t if v's text without yaml.v3 differs from yaml.v3's,
// and reports whether it was written without it.
func sameItem[T comparable](t interface {
	Helper()
	Fatal(...any)
	Fatalf(string, ...any)
}, v T, key string) bool {
	t.Helper()
	want, err := encodeItemYAML(v, key)
	if err != nil {
		t.Fatal(err)
	}
	got, ok := appendSessionItem(nil, v)
	if !ok {
		return false
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%#v written without yaml.v3:\n%s\nyaml.v3:\n%s", v, got, want)
	}
	return true
}

// TestFastSessionItemsOverTheLibrary: every command and tool result of the
// library's sessions is written without yaml.v3, and as yaml.v3 writes it.
func TestFastSessionItemsOverTheLibrary(t *testing.T) {
	total, fast := 0, 0
	for _, path := range libraryPaths(t) {
		f, err := Load(path)
		if err != nil {
			t.Fatal(err)
		}
		if f.Session == nil {
			continue
		}
		for _, c := range f.Session.Commands {
			total++
			if sameItem(t, c, "commands") {
				fast++
			}
		}
		for _, r := range f.Session.ToolResults {
			total++
			if sameItem(t, r, "tool_results") {
				fast++
			}
		}
	}
	t.Logf("%d of %d session items written without yaml.v3", fast, total)
	if total < 50 || fast != total {
		t.Fatalf("only %d of %d session items written without yaml.v3", fast, total)
	}
}

// TestAppendInteractionIsEncodeInteraction: interactions appended one after
// the other to one buffer are each exactly EncodeInteraction's text, the
// ones written without yaml.v3 and the ones left to it alike.
func TestAppendInteractionIsEncodeInteraction(t *testing.T) {
	its := []*Interaction{
		testInteraction(0, "plain text"),
		testInteraction(1, "\nstarts with a line break"), // left to yaml.v3 (double-quoted)
		testInteraction(2, strings.Repeat("long ", 5000)),
		testInteraction(3, "\xff not UTF-8"), // left to yaml.v3 (!!binary)
	}
	var want []byte
	buf := make([]byte, 0, 16) // too small: every append grows it
	fast := 0
	for _, it := range its {
		if _, ok := appendInteraction(nil, it); ok {
			fast++
		}
		text, err := EncodeInteraction(it)
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, text...)
		if buf, err = AppendInteraction(buf, it); err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(buf, want) {
		t.Errorf("appended:\n%s\nwant:\n%s", buf, want)
	}
	if fast == 0 || fast == len(its) {
		t.Errorf("%d of %d written without yaml.v3: the test wants both kinds", fast, len(its))
	}
}
