package cassette

import (
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
	"pgregory.net/rapid"
)

// Every string a cassette holds (bodies, chunks, tool output) reads back
// exactly as it was written, whatever its line breaks, leading blanks and
// tabs: the cases yaml.v3 alone gets wrong are table rows, then a property
// over strings built from the characters that matter to YAML.
func TestStringsRoundTrip(t *testing.T) {
	check := func(t interface{ Fatalf(string, ...any) }, s string) {
		f := New()
		f.Interactions = []*Interaction{{}}
		f.Interactions[0].Response.Body = s
		f.Interactions[0].Stream = &Stream{Chunks: []Chunk{{Data: s}}}
		f.Session = &Session{SessionID: "s", ToolResults: []ToolResult{{Name: "t", Output: s}}}
		data, err := f.Marshal()
		if err != nil {
			t.Fatalf("marshal %q: %v", s, err)
		}
		var back File
		if err := yaml.Unmarshal(data, &back); err != nil {
			t.Fatalf("%q is written as a file yaml.v3 cannot read: %v\n%s", s, err, data)
		}
		got := []string{back.Interactions[0].Response.Body, back.Interactions[0].Stream.Chunks[0].Data, back.Session.ToolResults[0].Output}
		for _, g := range got {
			if g != s {
				t.Fatalf("%q reads back as %q from:\n%s", s, g, data)
			}
		}
		if f2, err := Parse(data); err != nil || f2.Interactions[0].Stream.Chunks[0].Data != s {
			t.Fatalf("Parse of %q: %v", s, err)
		}
	}
	for _, s := range []string{"\nabc\n", "\n\n", "\n", "\n\ndata: x\n\n", "\tx\ny\n", " lead\nx\n", "a\n\n", "a\n\tb\n", "x\r\ny\n", "\r\n\r\n", "\u2028data: {}\n\n", "a\u2028b", "\u0085\n", "\ufeffx\ny"} {
		check(t, s)
	}
	rapid.Check(t, func(rt *rapid.T) {
		parts := rapid.SliceOf(rapid.SampledFrom([]string{"\n", "\r", "\t", " ", "a", ":", "- ", "#", "\"", "'", "é", "data: {}", "|", ">", "\u2028", "\u0085", "\u2029", "\ufeff", "\u00a0", "\r\n"})).Draw(rt, "parts")
		check(rt, strings.Join(parts, ""))
	})
}
