package view

import (
	"bufio"
	"fmt"
	"strings"
	"unicode/utf8"
)

// para writes text as wrapped paragraphs while it streams in: a word is held
// back only until the space after it arrives, so a long reply appears as it
// is produced. Explicit newlines are kept, as are spaces at the start of a
// line (indented code survives); wrapping happens only at spaces.
type para struct {
	w           *bufio.Writer
	first, rest string // prefixes of the first and the following lines
	on, off     string // style around the text of each line
	width       int    // wrap column; <= 0 means never wrap

	open    bool // a line has been started and not ended
	started bool // some line has been written
	col     int
	word    strings.Builder
	wordW   int
	spaces  int
}

func newPara(w *bufio.Writer, first, rest, on, off string, width int) *para {
	return &para{w: w, first: first, rest: rest, on: on, off: off, width: width}
}

// write adds streamed text.
func (p *para) write(s string) {
	for _, r := range s {
		switch r {
		case '\n':
			p.flushWord()
			p.spaces = 0
			if p.open {
				p.endLine()
			} else {
				p.started = true
				p.w.WriteByte('\n')
			}
		case ' ':
			p.flushWord()
			p.spaces++
		case '\t':
			p.flushWord()
			p.spaces += 4
		default:
			if vis, ok := visible(r); ok {
				p.word.WriteRune(r)
				p.wordW++
			} else {
				p.word.WriteString(vis)
				p.wordW += len(vis)
			}
		}
	}
}

// close ends the paragraph: the held-back word is written and the line ended.
func (p *para) close() {
	p.flushWord()
	p.spaces = 0
	if p.open {
		p.endLine()
	}
}

func (p *para) flushWord() {
	if p.word.Len() == 0 {
		return
	}
	switch {
	case !p.open:
		if !p.started {
			p.spaces = 0 // a paragraph starts at its first word
		}
		p.startLine()
	case p.width > 0 && p.col+p.spaces+p.wordW > p.width && p.col > prefixWidth(p.rest):
		p.endLine()
		p.startLine()
		p.spaces = 0
	}
	for range p.spaces {
		p.w.WriteByte(' ')
	}
	p.w.WriteString(p.word.String())
	p.col += p.spaces + p.wordW
	p.spaces = 0
	p.word.Reset()
	p.wordW = 0
}

func (p *para) startLine() {
	prefix := p.rest
	if !p.started {
		prefix = p.first
	}
	p.w.WriteString(prefix)
	p.w.WriteString(p.on)
	p.col = prefixWidth(prefix)
	p.open, p.started = true, true
}

func (p *para) endLine() {
	p.w.WriteString(p.off)
	p.w.WriteByte('\n')
	p.open = false
}

// prefixWidth is the number of columns a prefix takes, ignoring ANSI
// sequences.
func prefixWidth(s string) int {
	return utf8.RuneCountInString(stripANSI(s))
}

// visible reports whether r can go to a terminal as is; otherwise it returns
// a visible stand-in, so text from a model or a tool can never move the
// cursor, change colours or retitle the terminal.
func visible(r rune) (string, bool) {
	switch {
	case r == utf8.RuneError:
		return "", true
	case r < 0x20, r == 0x7f, r >= 0x80 && r < 0xa0:
		return fmt.Sprintf(`\x%02x`, r), false
	}
	return "", true
}

// clean makes one line of untrusted text safe to print: a tab becomes four
// spaces, other control characters (newlines included) visible escapes.
func clean(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r == '\t' {
			b.WriteString("    ")
		} else if vis, ok := visible(r); ok {
			b.WriteRune(r)
		} else {
			b.WriteString(vis)
		}
	}
	return b.String()
}

// clip shortens s to at most n bytes on a rune boundary, saying how much was
// left out.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s… (%d more bytes)", s[:cut], len(s)-cut)
}

// lines splits s into at most max lines (without a trailing empty line) and
// reports how many more there were.
func lines(s string, max int) ([]string, int) {
	s = strings.TrimRight(s, "\n")
	if s == "" {
		return nil, 0
	}
	all := strings.Split(s, "\n")
	if len(all) <= max {
		return all, 0
	}
	return all[:max], len(all) - max
}

// count formats n with thousands separators.
func count(n int) string {
	s := fmt.Sprint(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// plural returns "n word" or "n words".
func plural(n int, word string) string {
	if n == 1 {
		return count(n) + " " + word
	}
	return count(n) + " " + word + "s"
}
