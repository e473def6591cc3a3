package jsonstr

import (
	"bytes"
	"encoding/json"
	"testing"

	"pgregory.net/rapid"
)

// text draws strings rich in what the encoding treats specially: invalid
// UTF-8, multi-byte characters, U+2028, control and HTML characters.
func text(t *rapid.T, label string) string {
	parts := rapid.SliceOfN(rapid.OneOf(
		rapid.SampledFrom([]string{"a", "é", "€", "𝄞", "\u2028", "\u2029", "<", ">", "&", `"`, `\`, "\n", "\x00", "\x1f", "\x7f", "\xff", "\xe2\x82", "\xf0\x9d", "\xc3"}),
		rapid.String(),
		rapid.Map(rapid.SliceOfN(rapid.Byte(), 0, 6), func(b []byte) string { return string(b) }),
	), 0, 16).Draw(t, label)
	var b bytes.Buffer
	for _, p := range parts {
		b.WriteString(p)
	}
	return b.String()
}

// TestAppendContentMatchesMarshal: AppendQuoted is encoding/json's
// encoding of a string, with and without HTML escaping.
func TestAppendContentMatchesMarshal(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := text(t, "s")
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := AppendQuoted(nil, s, true); !bytes.Equal(got, want) {
			t.Fatalf("html: %q, want %q", got, want)
		}
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(s); err != nil {
			t.Fatal(err)
		}
		if got, want := AppendQuoted(nil, s, false), bytes.TrimSuffix(buf.Bytes(), []byte("\n")); !bytes.Equal(got, want) {
			t.Fatalf("no html: %q, want %q", got, want)
		}
	})
}

// TestEscaperPiecesMatchWhole: a text cut anywhere (inside characters
// too) and encoded piece by piece encodes as the whole text does, and a
// reused Escaper starts clean after Flush.
func TestEscaperPiecesMatchWhole(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		html := rapid.Bool().Draw(t, "html")
		e := Escaper{HTML: html}
		for round := range 2 {
			s := text(t, "text")
			var got []byte
			for rest := s; ; {
				n := rapid.IntRange(0, len(rest)).Draw(t, "cut")
				got = e.Append(got, rest[:n])
				rest = rest[n:]
				if rest == "" {
					break
				}
			}
			got = e.Flush(got)
			if want := AppendContent(nil, s, html); !bytes.Equal(got, want) {
				t.Fatalf("round %d, html %v: %q encoded in pieces as %q, want %q", round, html, s, got, want)
			}
		}
	})
}

// TestEscaperHoldsCutCharacter: a piece ending inside a character writes
// nothing of it until the next piece completes it.
func TestEscaperHoldsCutCharacter(t *testing.T) {
	var e Escaper
	got := e.Append(nil, "ab\xe2\x82")
	if string(got) != "ab" {
		t.Fatalf("cut euro sign: wrote %q, want %q", got, "ab")
	}
	got = e.Append(got, "\xac!")
	if string(got) != "ab€!" {
		t.Fatalf("completed: %q", got)
	}
	if got = e.Flush(got); string(got) != "ab€!" {
		t.Fatalf("flush wrote more: %q", got)
	}
	got = e.Flush(e.Append(nil, "x\xf0\x9d"))
	if string(got) != `x\ufffd\ufffd` {
		t.Fatalf("text ending cut: %q", got)
	}
}
