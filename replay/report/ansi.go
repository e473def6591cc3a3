package report

import (
	"strconv"
	"strings"
)

// parseANSI cuts one line the view rendered in colour into spans, each
// classed by the colour and weight it was painted with ("b magenta",
// "dim", ...): the view's own colouring of thinking, text and tool calls,
// kept for the page.
func parseANSI(s string) Line {
	var out Line
	var bold, dim bool
	color := ""
	class := func() string {
		var c []string
		if bold {
			c = append(c, "b")
		}
		if dim {
			c = append(c, "dim")
		}
		if color != "" {
			c = append(c, color)
		}
		return strings.Join(c, " ")
	}
	for s != "" {
		i := strings.Index(s, "\x1b[")
		if i < 0 {
			out = appendSpan(out, class(), s)
			break
		}
		out = appendSpan(out, class(), s[:i])
		s = s[i+2:]
		j := strings.IndexByte(s, 'm')
		if j < 0 {
			break
		}
		for _, code := range strings.Split(s[:j], ";") {
			n, _ := strconv.Atoi(code)
			switch {
			case n == 0:
				bold, dim, color = false, false, ""
			case n == 1:
				bold = true
			case n == 2:
				dim = true
			case n >= 31 && n <= 36:
				color = [...]string{"red", "green", "yellow", "blue", "magenta", "cyan"}[n-31]
			}
		}
		s = s[j+1:]
	}
	return out
}

func appendSpan(l Line, class, text string) Line {
	if text == "" {
		return l
	}
	if n := len(l); n > 0 && l[n-1].Class == class {
		l[n-1].Text += text
		return l
	}
	return append(l, Span{Class: class, Text: text})
}
