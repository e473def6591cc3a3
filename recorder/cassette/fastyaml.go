package cassette

import (
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"
)

// This file writes an interaction as a list item without yaml.v3's
// reflection and event machinery: byte for byte what encodeYAML gives (the
// property and corpus tests hold it to that), at a fraction of the cost.
// A recording encodes every interaction on the path its client waits on,
// and the request body of a long conversation is most of the text.
//
// It writes only what it can decide exactly: a string whose yaml.v3 style
// depends on how yaml.v3 resolves plain scalars (numbers, dates, booleans)
// is encoded by yaml.v3 on its own (a scalar on one line reads the same in
// any block context), and anything else out of the ordinary (text that is
// not UTF-8, a string encodeYAML double-quotes itself, a multi-line string
// where a literal block would depend on more context, an empty header
// list) makes the caller encode the whole interaction with yaml.v3.

// appendInteraction appends it as an item of the interaction list; false
// means it could not, and b is to be discarded.
func appendInteraction(b []byte, it *Interaction) ([]byte, bool) {
	ok := true
	str := func(indent int, key, s string) {
		if !ok {
			return
		}
		b = appendIndent(b, indent)
		b = append(b, key...)
		b = append(b, ':', ' ')
		b, ok = appendValue(b, s, indent+2)
	}
	line := func(indent int, key, v string) {
		b = appendIndent(b, indent)
		b = append(b, key...)
		b = append(b, ": "...)
		b = append(b, v...)
		b = append(b, '\n')
	}
	b = append(b, "  - request:\n"...)
	str(6, "body", it.Request.Body)
	if ok {
		b, ok = appendValues(b, 6, "form", it.Request.Form)
	}
	if ok {
		b, ok = appendValues(b, 6, "headers", it.Request.Headers)
	}
	str(6, "url", it.Request.URL)
	str(6, "method", it.Request.Method)
	b = append(b, "    response:\n"...)
	str(6, "body", it.Response.Body)
	if ok {
		b, ok = appendValues(b, 6, "headers", it.Response.Headers)
	}
	str(6, "status", it.Response.Status)
	line(6, "code", strconv.Itoa(it.Response.Code))
	line(6, "duration", durationText(it.Response.Duration))
	if s := it.Stream; s != nil && ok {
		b = append(b, "    openmax:\n"...)
		line(6, "start", durationText(s.Start))
		if len(s.Chunks) > 0 {
			b = append(b, "      chunks:\n"...)
			for _, c := range s.Chunks {
				b = append(b, "        - at: "...)
				b = append(b, durationText(c.At)...)
				b = append(b, '\n')
				str(10, "data", c.Data)
			}
		}
		if e := s.Error; e != nil {
			b = append(b, "      error:\n"...)
			str(8, "kind", e.Kind)
			str(8, "message", e.Message)
			line(8, "at", durationText(e.At))
		}
	}
	return b, ok
}

// appendSessionItem appends v, an item of one of the session's lists (a
// command or a tool's result), as encodeItems writes it with yaml.v3: the
// item's lines under the list's key line. false means it could not (a
// string left to yaml.v3), and b is to be discarded. A recording saves its
// session before every line that reports a command, so this is on the
// path a client waits on once a turn.
func appendSessionItem(b []byte, v any) ([]byte, bool) {
	ok := true
	str := func(first bool, key, s string) {
		if !ok {
			return
		}
		if first {
			b = append(b, "  - "...)
		} else {
			b = append(b, "    "...)
		}
		b = append(b, key...)
		b = append(b, ':', ' ')
		b, ok = appendValue(b, s, 6)
	}
	num := func(key string, n int64) {
		b = append(b, "    "...)
		b = append(b, key...)
		b = append(b, ':', ' ')
		b = strconv.AppendInt(b, n, 10)
		b = append(b, '\n')
	}
	switch v := v.(type) {
	case Command:
		str(true, "line", v.Line)
		if v.TooLong != 0 {
			num("too_long", v.TooLong)
		}
		num("turn", int64(v.Turn))
		if v.After != "" {
			str(false, "after", v.After)
		}
		if v.Nth != 0 {
			num("nth", int64(v.Nth))
		}
		if v.Refused {
			b = append(b, "    refused: true\n"...)
		}
		if v.AfterLines != 0 {
			num("after_lines", int64(v.AfterLines))
		}
	case ToolResult:
		str(true, "name", v.Name)
		str(false, "args", v.Args)
		b = append(b, "    ok: "...)
		b = strconv.AppendBool(b, v.OK)
		b = append(b, '\n')
		str(false, "output", v.Output)
	default:
		return b, false
	}
	return b, ok
}

// durationText is a duration as yaml.v3 writes it: its String, plain
// (digits, a point, unit letters and a leading minus never need quotes).
func durationText(d time.Duration) string { return d.String() }

func appendIndent(b []byte, n int) []byte {
	for range n {
		b = append(b, ' ')
	}
	return b
}

// appendValues appends "key:" and a map of string lists (headers, a
// form) under it, keys in yaml.v3's order.
func appendValues(b []byte, indent int, key string, m map[string][]string) ([]byte, bool) {
	b = appendIndent(b, indent)
	b = append(b, key...)
	if len(m) == 0 {
		return append(b, ": {}\n"...), true
	}
	b = append(b, ":\n"...)
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	if len(keys) > 1 {
		slices.SortFunc(keys, func(a, b string) int {
			switch {
			case yamlKeyLess(a, b):
				return -1
			case yamlKeyLess(b, a):
				return 1
			}
			return 0
		})
	}
	ok := true
	for _, k := range keys {
		vs := m[k]
		if len(vs) == 0 || k == "" || len(k) > 120 || strings.ContainsAny(k, "\r\n") {
			// yaml.v3 writes a key over 128 bytes (with its quotes), or
			// over lines, as a complex key ("? ").
			return b, false
		}
		b = appendIndent(b, indent+2)
		if b, ok = appendLine(b, k); !ok {
			return b, false
		}
		b = append(b, ":\n"...)
		for _, v := range vs {
			b = appendIndent(b, indent+4)
			b = append(b, '-', ' ')
			if b, ok = appendLine(b, v); !ok {
				return b, false
			}
			b = append(b, '\n')
		}
	}
	return b, true
}

// appendValue appends s as a mapping value whose key is at column
// indent-2, and the line break after it.
func appendValue(b []byte, s string, indent int) ([]byte, bool) {
	if strings.IndexByte(s, '\n') < 0 {
		b, ok := appendLine(b, s)
		return append(b, '\n'), ok
	}
	if first, _ := utf8.DecodeRuneInString(s); first == '\n' || first == '\r' || unicode.IsSpace(first) {
		return b, false // encodeYAML's to double-quote (unsafeBlock)
	}
	a, ok := analyze(s)
	if !ok {
		return b, false
	}
	if !a.blockAllowed {
		// yaml.v3 double-quotes it, on one line.
		b, ok = appendAlone(b, s)
		return append(b, '\n'), ok
	}
	return appendLiteral(b, s, indent), true
}

// appendLiteral writes s as yaml.v3 writes a literal block whose content
// is at column indent; s holds a line break and does not start with a
// blank or one (those are encodeYAML's to double-quote).
func appendLiteral(b []byte, s string, indent int) []byte {
	b = append(b, '|')
	// The chomping indicator: keep when s ends in two line breaks (or is
	// one), strip when it does not end in one.
	switch {
	case !strings.HasSuffix(s, "\n"):
		b = append(b, '-')
	case len(s) == 1 || s[len(s)-2] == '\n':
		b = append(b, '+')
	}
	b = append(b, '\n')
	for s != "" {
		i := strings.IndexByte(s, '\n')
		if i != 0 {
			b = appendIndent(b, indent)
		}
		if i < 0 {
			b = append(b, s...)
			b = append(b, '\n')
			break
		}
		b = append(b, s[:i+1]...)
		s = s[i+1:]
	}
	return b
}

// appendLine appends s, which holds no "\n", as yaml.v3 writes it in a
// block mapping or sequence (as a value, or a key of at most 120 bytes
// on one line that is not empty): plain, single-quoted or double-quoted, on one line.
func appendLine(b []byte, s string) ([]byte, bool) {
	if s == "" || !plainResolves(s) {
		return appendAlone(b, s)
	}
	a, ok := analyze(s)
	switch {
	case !ok:
		return b, false
	case a.blockPlain:
		return append(b, s...), true
	case a.singleQuoted && !a.lineBreaks:
		b = append(b, '\'')
		for {
			i := strings.IndexByte(s, '\'')
			if i < 0 {
				break
			}
			b = append(b, s[:i+1]...)
			b = append(b, '\'')
			s = s[i+1:]
		}
		b = append(b, s...)
		return append(b, '\''), true
	}
	return appendAlone(b, s)
}

// plainResolves reports whether yaml.v3 lets s be plain as far as its
// tags go (s resolves as a string), for the strings it can tell without
// yaml.v3's resolver: those whose first character is no hint of a number,
// a date, a boolean or null, and the words that start with a letter that
// is one (yYnNtTfFoO) but are none of those.
func plainResolves(s string) bool {
	switch s[0] {
	case '+', '-', '.', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9', '~':
		return false
	case 'y', 'Y', 'n', 'N', 't', 'T', 'f', 'F', 'o', 'O':
		switch s {
		case "true", "True", "TRUE", "false", "False", "FALSE", "null", "Null", "NULL",
			"y", "Y", "yes", "Yes", "YES", "on", "On", "ON", "n", "N", "no", "No", "NO", "off", "Off", "OFF":
			return false
		}
	}
	return true
}

// alone caches what yaml.v3 writes for short strings fastyaml leaves to
// it (header values such as a Content-Length, mostly), bounded.
var alone struct {
	sync.Mutex
	m map[string]string
}

// appendAlone appends s as yaml.v3 writes it alone: on one line, which is
// how it writes it in any block context (its line width is unlimited).
func appendAlone(b []byte, s string) ([]byte, bool) {
	short := len(s) <= 64
	if short {
		alone.Lock()
		t, ok := alone.m[s]
		alone.Unlock()
		if ok {
			return append(b, t...), true
		}
	}
	if unsafeBlock(s) || !utf8.ValidString(s) {
		return b, false
	}
	out, err := emitYAML(s)
	if err != nil || strings.IndexByte(string(out), '\n') != len(out)-1 || out[0] == '!' || out[0] == '|' || out[0] == '>' {
		return b, false
	}
	t := string(out[:len(out)-1])
	if short {
		alone.Lock()
		if alone.m == nil || len(alone.m) >= 4096 {
			alone.m = make(map[string]string)
		}
		alone.m[s] = t
		alone.Unlock()
	}
	return append(b, t...), true
}

// scalarInfo is what yaml.v3's emitter works out about a string before it
// picks a style (yaml_emitter_analyze_scalar), for a block context.
type scalarInfo struct {
	lineBreaks, blockPlain, singleQuoted, blockAllowed bool
}

// analyze is yaml_emitter_analyze_scalar for s (not empty) in yaml.v3's
// unicode mode; false for a string encodeYAML writes itself (unsafeBlock)
// or that is not UTF-8.
func analyze(s string) (scalarInfo, bool) {
	var (
		blockIndicators, lineBreaks, special, tabs          bool
		leadingSpace, leadingBreak, trailingSpace, trailing bool
		breakSpace, spaceBreak, precededByWS, previousSpace bool
		previousBreak                                       bool
	)
	n := len(s)
	if n >= 3 && (s[:3] == "---" || s[:3] == "...") {
		blockIndicators = true
	}
	precededByWS = true
	for i, w := 0, 0; i < n; i += w {
		c := s[i]
		w = 1
		if i > 0 && plainByte[c] {
			// Printable ASCII that is no blank, break or indicator
			// here: the common case, in runs.
			previousSpace, previousBreak, precededByWS = false, false, false
			continue
		}
		if c >= 0x80 {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size <= 1 {
				return scalarInfo{}, false
			}
			switch r {
			case '\u0085', '\u2028', '\u2029', '\ufeff':
				return scalarInfo{}, false // encodeYAML's to write
			}
			w = size
		}
		followedByWS := i+w >= n || s[i+w] == ' ' || s[i+w] == '\t'
		if i == 0 {
			switch c {
			case '#', ',', '[', ']', '{', '}', '&', '*', '!', '|', '>', '\'', '"', '%', '@', '`':
				blockIndicators = true
			case '?', ':', '-':
				if followedByWS {
					blockIndicators = true
				}
			}
		} else {
			switch c {
			case ':':
				if followedByWS {
					blockIndicators = true
				}
			case '#':
				if precededByWS {
					blockIndicators = true
				}
			}
		}
		if c == '\t' {
			tabs = true
		} else if !printable(s, i) {
			special = true
		}
		switch {
		case c == ' ':
			leadingSpace = leadingSpace || i == 0
			trailingSpace = trailingSpace || i+w == n
			breakSpace = breakSpace || previousBreak
			previousSpace, previousBreak = true, false
		case c == '\n' || c == '\r':
			lineBreaks = true
			leadingBreak = leadingBreak || i == 0
			trailing = trailing || i+w == n
			spaceBreak = spaceBreak || previousSpace
			previousSpace, previousBreak = false, true
		default:
			previousSpace, previousBreak = false, false
		}
		precededByWS = c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == 0
	}
	a := scalarInfo{lineBreaks: lineBreaks, blockPlain: true, singleQuoted: true, blockAllowed: true}
	if leadingSpace || leadingBreak || trailingSpace || trailing || lineBreaks || blockIndicators {
		a.blockPlain = false
	}
	if trailingSpace {
		a.blockAllowed = false
	}
	if breakSpace || spaceBreak || tabs || special {
		a.blockPlain, a.singleQuoted = false, false
	}
	if spaceBreak || special {
		a.blockAllowed = false
	}
	return a, true
}

// plainByte marks the bytes analyze needs to look at no further past the
// first: printable ASCII but a space, ':' and '#'.
var plainByte = func() (t [256]bool) {
	for c := 0x21; c <= 0x7E; c++ {
		t[c] = c != ':' && c != '#'
	}
	return t
}()

// printable is yaml.v3's is_printable at s[i] (a valid UTF-8 string).
func printable(s string, i int) bool {
	c := s[i]
	switch {
	case c == '\n' || c >= 0x20 && c <= 0x7E:
		return true
	case c == 0xC2:
		return s[i+1] >= 0xA0
	case c > 0xC2 && c < 0xED:
		return true
	case c == 0xED:
		return s[i+1] < 0xA0
	case c == 0xEE:
		return true
	case c == 0xEF:
		return !(s[i+1] == 0xBB && s[i+2] == 0xBF) && !(s[i+1] == 0xBF && (s[i+2] == 0xBE || s[i+2] == 0xBF))
	}
	return false
}

// yamlKeyLess is the order yaml.v3 sorts string map keys in (its
// keyList.Less for two strings): runs of digits compare as numbers, and
// letters before other characters.
func yamlKeyLess(a, b string) bool {
	ar, br := []rune(a), []rune(b)
	digits := false
	for i := 0; i < len(ar) && i < len(br); i++ {
		if ar[i] == br[i] {
			digits = unicode.IsDigit(ar[i])
			continue
		}
		al := unicode.IsLetter(ar[i])
		bl := unicode.IsLetter(br[i])
		if al && bl {
			return ar[i] < br[i]
		}
		if al || bl {
			if digits {
				return al
			}
			return bl
		}
		var ai, bi int
		var an, bn int64
		if ar[i] == '0' || br[i] == '0' {
			for j := i - 1; j >= 0 && unicode.IsDigit(ar[j]); j-- {
				if ar[j] != '0' {
					an = 1
					bn = 1
					break
				}
			}
		}
		for ai = i; ai < len(ar) && unicode.IsDigit(ar[ai]); ai++ {
			an = an*10 + int64(ar[ai]-'0')
		}
		for bi = i; bi < len(br) && unicode.IsDigit(br[bi]); bi++ {
			bn = bn*10 + int64(br[bi]-'0')
		}
		if an != bn {
			return an < bn
		}
		if ai != bi {
			return ai < bi
		}
		return ar[i] < br[i]
	}
	return len(ar) < len(br)
}
