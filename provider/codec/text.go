package codec

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The helpers a wire and its readers share to describe recorded traffic
// for a person (Note, Call.Summary), so every wire renders text alike.

// Quote renders s on one line, Go-quoted, so every byte is visible.
func Quote(s string) string { return strconv.Quote(s) }

// Clip cuts s to max runes, marking a cut with "…".
func Clip(s string, max int) string {
	if utf8.RuneCountInString(s) <= max {
		return s
	}
	r := []rune(s)
	return string(r[:max]) + "…"
}

// OneLine renders s on one line, control characters and invalid UTF-8
// escaped, clipped to max runes (0 for no limit) with the size of what
// was left off.
func OneLine(s string, max int) string {
	var b strings.Builder
	runes := 0
	for i := 0; i < len(s); {
		if max > 0 && runes == max {
			fmt.Fprintf(&b, "… (+%d B)", len(s)-i)
			break
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
		runes++
	}
	return b.String()
}

// Plural is "1 noun" or "N nouns".
func Plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

// PreviewRunes is how many runes of a text a Summary or a chunk preview
// shows.
const PreviewRunes = 72
