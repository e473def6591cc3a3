package view

import (
	"os"
	"regexp"
	"sync"
)

// style holds the ANSI sequences of a render; every field is empty when
// colour is off, so the same code writes both.
type style struct {
	reset, bold, dim, red, green, yellow, blue, magenta, cyan string
}

func newStyle(color bool) style {
	if !color {
		return style{}
	}
	return style{
		reset: "\x1b[0m", bold: "\x1b[1m", dim: "\x1b[2m",
		red: "\x1b[31m", green: "\x1b[32m", yellow: "\x1b[33m",
		blue: "\x1b[34m", magenta: "\x1b[35m", cyan: "\x1b[36m",
	}
}

// paint wraps s in the sequence code (and a reset), or returns s as is when
// colour is off.
func (s style) paint(code, text string) string {
	if code == "" || text == "" {
		return text
	}
	return code + text + s.reset
}

var ansiSeq = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile("\x1b\\[[0-9;]*m") })

// stripANSI removes the colour sequences this package writes.
func stripANSI(s string) string { return ansiSeq().ReplaceAllString(s, "") }

// IsTerminal reports whether output to f should be coloured: f is a
// terminal (a character device) and the NO_COLOR environment variable is
// unset or empty (https://no-color.org). It uses only the standard library,
// so a redirected stdout, a pipe or a file is never coloured.
func IsTerminal(f *os.File) bool {
	if f == nil || os.Getenv("NO_COLOR") != "" {
		return false
	}
	fi, err := f.Stat()
	if err != nil {
		return false
	}
	return fi.Mode()&os.ModeCharDevice != 0
}
