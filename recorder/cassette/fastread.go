package cassette

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
	"unsafe"

	"gopkg.in/yaml.v3"
)

// The fast reader decodes the block-style YAML that yaml.v3 writes for a
// cassette straight into a File, line by line from the file, without the
// node tree yaml.v3 builds first (a node of some 150 bytes for every
// scalar, and the whole file in memory beside it). Chunk data that repeats
// the response body (as it always does in a recording) is taken as a
// slice of the body instead of a second copy.
//
// It reads a subset of YAML: block mappings and sequences, plain scalars
// on one line, single- and double-quoted scalars on one line, literal
// block scalars (| with a chomping indicator) and the empty flow
// collections {} and []. Anything else (aliases, tags, comments, folded or
// multi-line flow scalars, unknown members, duplicate keys, a value yaml.v3
// would resolve differently) makes it give up with errUnsupported, and the
// file is read by yaml.v3 instead: what the fast reader accepts, it
// decodes exactly as yaml.v3 would (TestRapidFastReadAgreesWithYAML).

// errUnsupported is the fast reader giving up: the caller falls back to
// yaml.v3.
var errUnsupported = errors.New("cassette: outside the fast reader's YAML subset")

// unsupported wraps errUnsupported with what was met, for debugging.
func unsupported(what string) error { return fmt.Errorf("%w: %s", errUnsupported, what) }

// fastReader is the state of one fast read.
type fastReader struct {
	br      *bufio.Reader
	long    []byte // a line longer than br's buffer, assembled
	line    []byte // the current line without its newline; nil at the end
	eof     bool
	newline bool    // the current line ended with a newline
	ind     int     // column of the current line's content
	pos     int     // index in line where the content starts
	text    textBuf // the block scalar being read

	// pool is the last response body read, and poolOff how much of it
	// the chunks read since have matched: chunk data equal to the next
	// bytes of the pool is taken as a slice of it.
	pool    string
	poolOff int

	// lines counts the lines read, for errors.
	lines int
	// lineIsLong says line is in long (see own).
	lineIsLong bool
	// native is set once an openmax member is read, at the top of the
	// document or on an interaction: the file is an openmax cassette.
	native bool
	// top are the document's top-level keys, in order.
	top []string
	// keyQuoted says the mapping key last read was quoted.
	keyQuoted bool
}

// maxLine is MaxLine; tests lower it.
var maxLine = MaxLine

// lineTooLong is the error for a line over maxLine; it is ErrTooLarge.
type lineTooLong struct{ line int }

func (e lineTooLong) Error() string {
	return fmt.Sprintf("line %d is over %d bytes (%d MiB) with its line break, the longest a cassette may have", e.line, maxLine, maxLine>>20)
}

func (e lineTooLong) Is(target error) bool { return target == ErrTooLarge }

// fastRead decodes a cassette from r, or gives up with errUnsupported
// (or fails reading r).
func fastRead(r io.Reader) (*File, error) {
	f, _, err := fastReadNative(r)
	return f, err
}

// fastReadNative is fastRead, also reporting whether the document has an
// openmax member (at the top, or on an interaction): whether it is an
// openmax cassette rather than a stock go-vcr one.
func fastReadNative(r io.Reader) (*File, bool, error) {
	br, ok := r.(*bufio.Reader) // a source's, sized to its file
	if !ok {
		br = bufio.NewReaderSize(r, readBuffer)
	}
	p := &fastReader{br: br}
	f, err := p.file()
	return f, p.native, err
}

func (p *fastReader) file() (*File, error) {
	if err := p.advance(); err != nil {
		return nil, err
	}
	if p.eof {
		return nil, unsupported("an empty file")
	}
	var f File
	err := p.mapping(0, func(key string, v *value) error {
		p.top = append(p.top, key)
		switch key {
		case "version":
			n, err := v.int()
			f.Version = n
			return err
		case "interactions":
			if v.null() {
				f.Interactions = nil
				return nil
			}
			f.Interactions = []*Interaction{}
			return v.seq(func(item *value) error {
				if item.null() {
					f.Interactions = append(f.Interactions, nil)
					return nil
				}
				it := &Interaction{}
				f.Interactions = append(f.Interactions, it)
				return p.interaction(it, item)
			})
		case "openmax":
			p.native = true
			return v.session(&f)
		}
		return unsupported("top-level member " + key)
	})
	if err != nil {
		return nil, err
	}
	if !p.eof {
		return nil, unsupported("text after the document")
	}
	return &f, nil
}

func (p *fastReader) interaction(it *Interaction, v *value) error {
	return v.mapping(func(key string, v *value) error {
		switch key {
		case "request":
			return v.mapping(func(key string, v *value) error {
				var err error
				switch key {
				case "body":
					it.Request.Body, err = v.str(false)
				case "form":
					var h map[string][]string
					h, err = v.multimap()
					it.Request.Form = url.Values(h)
				case "headers":
					var h map[string][]string
					h, err = v.multimap()
					it.Request.Headers = http.Header(h)
				case "url":
					it.Request.URL, err = v.str(false)
				case "method":
					it.Request.Method, err = v.str(false)
				default:
					err = unsupported("request member " + key)
				}
				return err
			})
		case "response":
			return v.mapping(func(key string, v *value) error {
				var err error
				switch key {
				case "body":
					it.Response.Body, err = v.str(false)
					p.pool, p.poolOff = it.Response.Body, 0
				case "headers":
					var h map[string][]string
					h, err = v.multimap()
					it.Response.Headers = http.Header(h)
				case "status":
					it.Response.Status, err = v.str(false)
				case "code":
					it.Response.Code, err = v.int()
				case "duration":
					it.Response.Duration, err = v.duration()
				default:
					err = unsupported("response member " + key)
				}
				return err
			})
		case "openmax":
			p.native = true
			if v.null() {
				it.Stream = nil
				return nil
			}
			s := &Stream{}
			it.Stream = s
			return v.mapping(func(key string, v *value) error {
				var err error
				switch key {
				case "start":
					s.Start, err = v.duration()
				case "chunks":
					if v.null() {
						s.Chunks = nil
						return nil
					}
					s.Chunks = []Chunk{}
					err = v.seq(func(item *value) error {
						var c Chunk
						if item.null() {
							s.Chunks = append(s.Chunks, c)
							return nil
						}
						err := item.mapping(func(key string, v *value) error {
							var err error
							switch key {
							case "at":
								c.At, err = v.duration()
							case "data":
								c.Data, err = v.str(true)
							default:
								err = unsupported("chunk member " + key)
							}
							return err
						})
						s.Chunks = append(s.Chunks, c)
						return err
					})
				case "error":
					if v.null() {
						s.Error = nil
						return nil
					}
					e := &Error{}
					s.Error = e
					err = v.mapping(func(key string, v *value) error {
						var err error
						switch key {
						case "kind":
							e.Kind, err = v.str(false)
						case "message":
							e.Message, err = v.str(false)
						case "at":
							e.At, err = v.duration()
						default:
							err = unsupported("error member " + key)
						}
						return err
					})
				default:
					err = unsupported("openmax member " + key)
				}
				return err
			})
		}
		return unsupported("interaction member " + key)
	})
}

// advance moves to the next line.
//
// A line longer than the reader's buffer is assembled in p.long, its
// characters checked as they come (a long run of bytes YAML refuses is
// given up on at once, not read to its end), and refused past maxLine.
func (p *fastReader) advance() error {
	if p.eof {
		return nil
	}
	if cap(p.long) > longKeep {
		p.long = nil // not kept for the rest of the file
	}
	p.lines++
	line, err := p.br.ReadSlice('\n')
	p.lineIsLong = errors.Is(err, bufio.ErrBufferFull)
	checked := 0 // bytes of the line found readable as it was read
	if p.lineIsLong {
		p.long = append(p.long[:0], line...)
		for errors.Is(err, bufio.ErrBufferFull) {
			n, ok := readablePrefix(p.long[checked:])
			if !ok {
				return unsupported("a character yaml.v3 refuses, or a byte order mark")
			}
			checked += n
			line, err = p.br.ReadSlice('\n')
			if len(p.long)+len(line) > maxLine {
				return lineTooLong{p.lines}
			}
			p.long = append(p.long, line...)
		}
		line = p.long
	}
	if err != nil && err != io.EOF {
		return err
	}
	if err == io.EOF && len(line) == 0 {
		p.eof, p.line = true, nil
		return nil
	}
	p.newline = len(line) > 0 && line[len(line)-1] == '\n'
	if p.newline {
		line = line[:len(line)-1]
	}
	if len(line) > 0 && line[len(line)-1] == '\r' {
		return unsupported("a carriage return")
	}
	if !readable(line[min(checked, len(line)):]) {
		return unsupported("a character yaml.v3 refuses, or a byte order mark")
	}
	p.line = line
	n := 0
	for n < len(line) && line[n] == ' ' {
		n++
	}
	p.ind, p.pos = n, n
	return nil
}

// longKeep is the largest line buffer the reader keeps for the next long
// line; a larger one (a body written on one line) is let go once read.
const longKeep = 4 << 20

// readable reports whether yaml.v3's reader takes every character of the
// line as part of that one line: tab, the printable ASCII range, and valid
// UTF-8 for the code points it allows (0xA0-0xD7FF, 0xE000-0xFFFD, and
// 0x10000 up), except those it reads as line breaks (0x85, 0x2028,
// 0x2029) and the byte order mark, which the fast reader leaves to yaml.v3.
func readable(line []byte) bool {
	n, ok := readablePrefix(line)
	return ok && n == len(line)
}

// readablePrefix checks line as readable does up to a character cut off
// at its end (the rest of it not read yet), returning how many bytes it
// checked.
func readablePrefix(line []byte) (int, bool) {
	for i := 0; i < len(line); {
		c := line[i]
		if c >= 0x20 && c <= 0x7e || c == '\t' {
			i++
			continue
		}
		if c < 0x80 {
			return i, false
		}
		if !utf8.FullRune(line[i:]) {
			return i, true
		}
		r, n := utf8.DecodeRune(line[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			return i, false
		case r == 0x2028 || r == 0x2029:
			return i, false // line breaks to YAML, as 0x85 is
		case r >= 0xa0 && r <= 0xd7ff, r >= 0xe000 && r <= 0xfffd && r != 0xfeff, r >= 0x10000:
		default:
			return i, false
		}
		i += n
	}
	return len(line), true
}

// content is the current line from its content on.
func (p *fastReader) content() []byte { return p.line[p.pos:] }

// skipBlank moves past blank lines between nodes.
func (p *fastReader) skipBlank() error {
	for !p.eof {
		c := p.content()
		if len(c) > 0 {
			switch {
			case c[0] == '#' || c[0] == '\t':
				return unsupported("a comment or a tab")
			case p.ind == 0 && (bytes.HasPrefix(c, []byte("---")) || bytes.HasPrefix(c, []byte("...")) || c[0] == '%'):
				return unsupported("a document marker or directive")
			}
			return nil
		}
		if err := p.advance(); err != nil {
			return err
		}
	}
	return nil
}

// isSeqEntry reports whether c starts a block sequence entry.
func isSeqEntry(c []byte) bool { return len(c) > 0 && c[0] == '-' && (len(c) == 1 || c[1] == ' ') }

// mapping reads a block mapping whose keys are at column indent, calling
// field for each member.
func (p *fastReader) mapping(indent int, field func(key string, v *value) error) error {
	var seen []string
	for {
		if err := p.skipBlank(); err != nil {
			return err
		}
		if p.eof || p.ind < indent {
			return nil
		}
		c := p.content()
		if p.ind > indent || isSeqEntry(c) {
			return unsupported("indentation")
		}
		key, rest, ok := splitKey(c)
		if !ok {
			return unsupported("a mapping line without a key")
		}
		p.keyQuoted = c[0] == '\'' || c[0] == '"'
		for _, s := range seen {
			if s == key {
				return unsupported("a duplicate key")
			}
		}
		seen = append(seen, key)
		v, err := p.valueAfter(rest, indent, true)
		if err != nil {
			return err
		}
		if err := field(key, v); err != nil {
			return err
		}
		if !v.done {
			return unsupported(key + " was not read") // a bug: yaml.v3 reads it
		}
	}
}

// splitKey splits a mapping line into its key and what follows the colon
// (spaces trimmed).
func splitKey(c []byte) (string, []byte, bool) {
	var key string
	var after []byte
	switch c[0] {
	case '\'', '"':
		s, _, n, ok := quoted(c)
		if !ok || n >= len(c) || c[n] != ':' {
			return "", nil, false
		}
		key, after = string(s), c[n+1:]
	default:
		i := bytes.Index(c, []byte(": "))
		if i < 0 {
			if c[len(c)-1] != ':' {
				return "", nil, false
			}
			i = len(c) - 1
		}
		k := c[:i]
		if !plainOK(k) || isNull(string(k)) || string(k) == "<<" {
			return "", nil, false
		}
		key, after = string(k), c[i+1:]
	}
	if len(after) > 0 && after[0] != ' ' {
		return "", nil, false
	}
	return key, bytes.TrimLeft(after, " "), true
}

// plainOK reports whether s is a one-line plain scalar the fast reader
// takes as written: it starts with no indicator and holds no comment, no
// ": " and no trailing colon or space.
func plainOK(s []byte) bool {
	if len(s) == 0 || s[len(s)-1] == ' ' || s[len(s)-1] == ':' || s[len(s)-1] == '\t' {
		return false
	}
	switch s[0] {
	case '-', '?', ':':
		if len(s) == 1 || s[1] == ' ' || s[1] == '\t' {
			return false
		}
	case ',', '[', ']', '{', '}', '#', '&', '*', '!', '|', '>', '\'', '"', '%', '@', '`', ' ', '\t':
		return false
	}
	return !bytes.Contains(s, []byte(": ")) && !bytes.Contains(s, []byte(" #")) && !bytes.Contains(s, []byte("\t")) && utf8.Valid(s)
}

// isNull reports whether a plain scalar is YAML's null.
func isNull(s string) bool {
	switch s {
	case "", "~", "null", "Null", "NULL":
		return true
	}
	return false
}

// value is a node about to be read: inline (the text after "key: " or
// "- "), a literal block scalar, or a block collection on the following
// lines.
type value struct {
	p      *fastReader
	indent int // the column of the key or entry it belongs to
	kind   int
	text   []byte // kindInline: the text (valid until the reader moves on)
	child  int    // kindBlock: the column of the collection
	header []byte // kindLiteral: the header after '|'
	done   bool
}

const (
	kindNull = iota
	kindInline
	kindLiteral
	kindBlock
)

// valueAfter classifies the node after a key or entry marker, rest being
// the rest of its line. For an inline scalar the line is not consumed yet
// (the scalar's text lives in it); value's readers move on.
//
// A mapping's value may be a sequence at the key's own column ("key:\n-
// a"); an entry's may not (a "-" there is the next entry).
func (p *fastReader) valueAfter(rest []byte, indent int, inMapping bool) (*value, error) {
	v := &value{p: p, indent: indent}
	switch {
	case len(rest) == 0:
		if err := p.advance(); err != nil {
			return nil, err
		}
		if err := p.skipBlank(); err != nil {
			return nil, err
		}
		if !p.eof && (p.ind > indent || inMapping && p.ind == indent && isSeqEntry(p.content())) {
			v.kind, v.child = kindBlock, p.ind
		}
	case rest[0] == '|':
		v.kind, v.header = kindLiteral, rest[1:]
	default:
		v.kind, v.text = kindInline, rest
	}
	return v, nil
}

// finish marks an inline value read and moves past its line.
func (v *value) finish() error {
	v.done = true
	if v.kind == kindInline {
		return v.p.advance()
	}
	return nil
}

// null reports (and consumes) a null node: nothing, or a plain null.
func (v *value) null() bool {
	if v.kind == kindNull || v.kind == kindInline && isNull(string(v.text)) {
		if v.finish() != nil {
			return false
		}
		return true
	}
	return false
}

// scalar reads the node as a scalar: its value, and whether it was plain
// (untyped: yaml.v3 resolves its type from the text).
func (v *value) scalar(dedupe bool) (string, bool, error) {
	p := v.p
	switch v.kind {
	case kindNull:
		v.done = true
		return "", true, nil
	case kindLiteral:
		s, err := p.literal(v.header, v.indent, dedupe)
		v.done = true
		return s, false, err
	case kindInline:
		t := v.text
		var s string
		plain := false
		switch t[0] {
		case '\'', '"':
			q, fresh, n, ok := quoted(t)
			if !ok || len(bytes.TrimRight(t[n:], " ")) > 0 {
				return "", false, unsupported("a quoted scalar over several lines, or text after one")
			}
			s = p.intern(q, fresh, dedupe)
		default:
			if string(t) == "{}" || string(t) == "[]" || !plainOK(t) {
				return "", false, unsupported("a flow collection or an indicator")
			}
			s, plain = p.intern(t, false, dedupe), true
		}
		return s, plain, v.finish()
	}
	return "", false, unsupported("a collection where a scalar belongs")
}

// intern returns b as a string: a slice of the pool when dedupe is set
// and b is what comes next in it, otherwise b's bytes. fresh says b was
// made for this value (nothing else holds it), so it becomes the string
// without a copy; so does a large part of a long line (see own).
func (p *fastReader) intern(b []byte, fresh, dedupe bool) string {
	if len(b) == 0 {
		return ""
	}
	if dedupe {
		if end := p.poolOff + len(b); end <= len(p.pool) && p.pool[p.poolOff:end] == string(b) {
			s := p.pool[p.poolOff:end]
			p.poolOff = end
			return s
		}
	}
	if fresh && cap(b)-len(b) <= len(b)/4 {
		return unsafe.String(unsafe.SliceData(b), len(b))
	}
	if fresh {
		return string(b) // escapes shrank it: not the whole buffer kept
	}
	return p.own(b)
}

// ownMin is the smallest value taken out of a long line's buffer without
// a copy (see own).
const ownMin = 64 << 10

// own returns b, which lies in the current line, as a string. A large
// value of a long line (a body written on one line) takes the line's
// buffer with it instead of being copied: the reader assembles the next
// long line in a new buffer.
func (p *fastReader) own(b []byte) string {
	if p.lineIsLong && len(b) >= ownMin {
		p.long, p.lineIsLong = nil, false
		return unsafe.String(unsafe.SliceData(b), len(b))
	}
	return string(b)
}

// str reads a string field as yaml.v3 does: a plain null is "", any other
// scalar its text.
func (v *value) str(dedupe bool) (string, error) {
	s, plain, err := v.scalar(dedupe)
	if err != nil {
		return "", err
	}
	if plain && isNull(s) {
		return "", nil
	}
	return s, nil
}

// int reads an int field: a plain decimal integer (or null, 0).
func (v *value) int() (int, error) {
	s, plain, err := v.scalar(false)
	if err != nil {
		return 0, err
	}
	if plain && isNull(s) {
		return 0, nil
	}
	if !plain || !decimal(s) {
		return 0, unsupported("an integer field that is not a plain decimal")
	}
	n, err := strconv.ParseInt(s, 10, strconv.IntSize)
	if err != nil {
		return 0, unsupported("an integer out of range")
	}
	return int(n), nil
}

// decimal reports whether s is 0 or a decimal integer without leading
// zeros (which yaml.v3 would read in other bases).
func decimal(s string) bool {
	t := strings.TrimPrefix(s, "-")
	if t == "" || len(t) > 1 && t[0] == '0' {
		return false
	}
	for _, c := range t {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// duration reads a time.Duration field: a string time.ParseDuration takes
// (or null, 0).
func (v *value) duration() (time.Duration, error) {
	s, plain, err := v.scalar(false)
	if err != nil {
		return 0, err
	}
	if plain && isNull(s) {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || plain && !plainString(s) {
		return 0, unsupported("a duration yaml.v3 would not read as a string")
	}
	return d, nil
}

// plainString reports whether yaml.v3 resolves the plain scalar s as a
// string: a duration always has a unit letter, so only the words it reads
// as booleans, infinities or NaN need ruling out.
func plainString(s string) bool {
	if _, err := strconv.ParseFloat(s, 64); err == nil {
		return false
	}
	switch strings.ToLower(s) {
	case "true", "false", "yes", "no", "on", "off", "y", "n", ".inf", "-.inf", "+.inf", ".nan":
		return false
	}
	return true
}

// mapping reads a block mapping node.
func (v *value) mapping(field func(key string, v *value) error) error {
	switch {
	case v.kind == kindNull:
		v.done = true
		return nil
	case v.kind == kindInline && string(v.text) == "{}":
		return v.finish()
	case v.kind != kindBlock || isSeqEntry(v.p.content()):
		return unsupported("a mapping that is not in block style")
	}
	v.done = true
	return v.p.mapping(v.child, field)
}

// seq reads a block sequence node, calling item for each entry.
func (v *value) seq(item func(v *value) error) error {
	p := v.p
	switch {
	case v.kind == kindInline && string(v.text) == "[]":
		return v.finish()
	case v.kind != kindBlock || !isSeqEntry(p.content()):
		return unsupported("a sequence that is not in block style")
	}
	v.done = true
	indent := v.child
	for {
		if err := p.skipBlank(); err != nil {
			return err
		}
		if p.eof || p.ind < indent {
			return nil
		}
		c := p.content()
		if p.ind > indent || !isSeqEntry(c) {
			return unsupported("sequence indentation")
		}
		spaces := 1
		for spaces < len(c) && c[spaces] == ' ' {
			spaces++
		}
		var ev *value
		rest := c[spaces:]
		if len(c) == 1 || len(rest) == 0 {
			var err error
			if ev, err = p.valueAfter(nil, indent, false); err != nil {
				return err
			}
		} else if _, _, ok := splitKey(rest); ok && rest[0] != '|' {
			// "- key: value": a mapping whose keys are at the column of
			// this key.
			p.ind, p.pos = indent+spaces, p.pos+spaces
			ev = &value{p: p, indent: indent, kind: kindBlock, child: p.ind}
		} else {
			var err error
			if ev, err = p.valueAfter(rest, indent, false); err != nil {
				return err
			}
		}
		if err := item(ev); err != nil {
			return err
		}
		if !ev.done {
			return unsupported("a sequence entry was not read") // a bug: yaml.v3 reads it
		}
	}
}

// multimap reads a map of string lists (http.Header, url.Values).
func (v *value) multimap() (map[string][]string, error) {
	if v.null() {
		return nil, nil
	}
	m := map[string][]string{}
	err := v.mapping(func(key string, v *value) error {
		if v.null() {
			m[key] = nil
			return nil
		}
		var list []string
		if v.kind == kindInline && string(v.text) == "[]" {
			list = []string{}
		}
		err := v.seq(func(item *value) error {
			s, err := item.str(false)
			list = append(list, s)
			return err
		})
		m[key] = list
		return err
	})
	return m, err
}

// session reads the file's openmax member. It is small, and holds the
// harness configuration with its own YAML rules, so it is decoded by
// yaml.v3: from a node tree the fast reader builds (sessionNode), or when
// the fast reader does not take its text, from yaml.v3's own parse of it.
func (v *value) session(f *File) error {
	p := v.p
	var doc []byte
	switch v.kind {
	case kindInline:
		doc = append([]byte("openmax: "), v.text...)
		doc = append(doc, '\n')
		if err := v.finish(); err != nil {
			return err
		}
	case kindLiteral:
		return unsupported("a scalar session")
	default:
		doc = []byte("openmax:\n")
		for !p.eof {
			if len(p.content()) > 0 && p.ind == 0 {
				break
			}
			doc = append(doc, p.line...)
			doc = append(doc, '\n')
			if err := p.advance(); err != nil {
				return err
			}
		}
		v.done = true
	}
	root, err := sessionNode(doc)
	if err != nil {
		var parsed yaml.Node
		if err := yaml.Unmarshal(doc, &parsed); err != nil {
			return unsupported("a session yaml.v3 does not read on its own")
		}
		if err := NoAliases(&parsed); err != nil {
			return unsupported("an alias")
		}
		root = &parsed
	}
	var s struct {
		Session *Session `yaml:"openmax"`
	}
	if err := root.Decode(&s); err != nil {
		return unsupported("a session yaml.v3 does not decode on its own")
	}
	f.Session = s.Session
	return nil
}

// sessionNode is the node tree yaml.v3 parses doc (the session's member,
// alone) into, as far as decoding it goes, built by the fast reader: the
// same kinds, values, and plain or quoted style (which decides whether a
// scalar's type is resolved from its text). yaml.v3's scanner is most of
// the time a session takes to read otherwise.
func sessionNode(doc []byte) (*yaml.Node, error) {
	p := &fastReader{br: bufio.NewReader(bytes.NewReader(doc))}
	if err := p.advance(); err != nil {
		return nil, err
	}
	m := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	err := p.mapping(0, func(key string, v *value) error {
		k := p.keyNode(key)
		n, err := v.node()
		m.Content = append(m.Content, k, n)
		return err
	})
	if err != nil {
		return nil, err
	}
	if !p.eof {
		return nil, unsupported("text after the session")
	}
	return &yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{m}}, nil
}

// keyNode is the node of the mapping key just read.
func (p *fastReader) keyNode(key string) *yaml.Node {
	k := &yaml.Node{Kind: yaml.ScalarNode, Value: key}
	if p.keyQuoted {
		k.Style = yaml.DoubleQuotedStyle
	}
	k.Tag = k.ShortTag()
	return k
}

// node reads the value as a yaml.v3 node (see sessionNode).
func (v *value) node() (*yaml.Node, error) {
	switch {
	case v.kind == kindBlock && isSeqEntry(v.p.content()):
		n := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
		err := v.seq(func(item *value) error {
			c, err := item.node()
			n.Content = append(n.Content, c)
			return err
		})
		return n, err
	case v.kind == kindBlock:
		n := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
		err := v.mapping(func(key string, item *value) error {
			k := v.p.keyNode(key)
			c, err := item.node()
			n.Content = append(n.Content, k, c)
			return err
		})
		return n, err
	case v.kind == kindInline && string(v.text) == "{}":
		return &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Style: yaml.FlowStyle}, v.finish()
	case v.kind == kindInline && string(v.text) == "[]":
		return &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Style: yaml.FlowStyle}, v.finish()
	}
	s, plain, err := v.scalar(false)
	n := &yaml.Node{Kind: yaml.ScalarNode, Value: s}
	if !plain {
		n.Style = yaml.DoubleQuotedStyle
	}
	n.Tag = n.ShortTag() // a plain scalar's resolved from its text, as yaml.v3's parser does
	return n, err
}

// literal reads a literal block scalar whose header (after '|') is given,
// belonging to a node at column indent; the reader is on its first line.
func (p *fastReader) literal(header []byte, indent int, dedupe bool) (string, error) {
	chomp, step := byte(0), 0
	for _, c := range header {
		switch {
		case (c == '+' || c == '-') && chomp == 0:
			chomp = c
		case c >= '1' && c <= '9' && step == 0:
			// An indentation indicator (yaml.v3 writes one for text that
			// starts with a space or a line break): the content is
			// indented that much more than the node's parent.
			step = int(c - '0')
		default:
			// A comment after the header: rare, left to yaml.v3.
			return "", unsupported("a block scalar header " + string(header))
		}
	}
	if err := p.advance(); err != nil {
		return "", err
	}
	buf := &p.text
	buf.reset()
	n := -1 // the content's indentation, once known
	if step > 0 {
		n = indent + step
	}
	breaks := 0  // line breaks owed since the last content line
	leading := 0 // the longest blank line before the first content line
	content := false
	for !p.eof {
		if n < 0 {
			if p.ind == len(p.line) { // blank
				leading = max(leading, len(p.line))
				breaks++
				if err := p.advance(); err != nil {
					return "", err
				}
				continue
			}
			if p.ind <= indent {
				break
			}
			if p.line[p.ind] == '\t' {
				return "", unsupported("a tab after a block scalar's indentation")
			}
			if leading > p.ind {
				return "", unsupported("a block scalar's leading blank line longer than its indentation")
			}
			n = p.ind
		}
		if p.ind < n && p.ind < len(p.line) {
			break // a less indented line ends the scalar
		}
		if len(p.line) <= n {
			breaks++ // an empty line
		} else {
			// Blank lines before the first content line are content too.
			buf.newlines(breaks)
			buf.write(p.line[n:])
			breaks, content = 1, true
		}
		if !p.newline {
			return "", unsupported("a block scalar at the end of a file without a final newline")
		}
		if err := p.advance(); err != nil {
			return "", err
		}
	}
	if !content {
		return "", unsupported("an empty block scalar")
	}
	switch chomp {
	case 0:
		buf.newlines(1)
	case '+':
		buf.newlines(breaks)
	}
	if dedupe {
		if end := p.poolOff + buf.n; end <= len(p.pool) && buf.equals(p.pool[p.poolOff:end]) {
			s := p.pool[p.poolOff:end]
			p.poolOff = end
			return s, nil
		}
	}
	return buf.text(), nil
}

// textBuf gathers a block scalar's bytes: in one slice while small, in
// blocks of blockSize once large, so that a large body is not copied
// again and again while it grows, nor left behind in a spare buffer; text
// copies it once into the string.
type textBuf struct {
	cur    []byte
	blocks [][]byte
	n      int
}

const blockSize = 1 << 20

func (b *textBuf) reset() {
	b.cur, b.blocks, b.n = b.cur[:0], nil, 0
	if cap(b.cur) > blockSize {
		b.cur = nil
	}
}

func (b *textBuf) write(p []byte) {
	b.n += len(p)
	for len(p) > 0 {
		if cap(b.cur) >= blockSize && len(b.cur) == cap(b.cur) {
			b.blocks = append(b.blocks, b.cur)
			b.cur = make([]byte, 0, blockSize)
		}
		k := len(p)
		if cap(b.cur) >= blockSize {
			k = min(k, cap(b.cur)-len(b.cur))
		}
		b.cur = append(b.cur, p[:k]...)
		p = p[k:]
	}
}

var newlineRun = []byte("\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n")

func (b *textBuf) newlines(n int) {
	for n > 0 {
		k := min(n, len(newlineRun))
		b.write(newlineRun[:k])
		n -= k
	}
}

// equals reports whether the bytes gathered are s (of length b.n).
func (b *textBuf) equals(s string) bool {
	off := 0
	for _, part := range append(b.blocks, b.cur) {
		if s[off:off+len(part)] != string(part) {
			return false
		}
		off += len(part)
	}
	return true
}

// text is the bytes gathered as a string.
func (b *textBuf) text() string {
	if len(b.blocks) == 0 {
		return string(b.cur)
	}
	out := make([]byte, 0, b.n)
	for _, part := range b.blocks {
		out = append(out, part...)
	}
	out = append(out, b.cur...)
	b.blocks = nil
	return unsafe.String(unsafe.SliceData(out), len(out)) // out is not kept
}

// quoted reads a single- or double-quoted scalar at the start of c,
// returning its value and the length it took; ok is false when it does
// not end on this line or holds an escape the fast reader leaves to
// yaml.v3. The value is a slice of c when the scalar has no escape, and
// fresh (made here) otherwise.
func quoted(c []byte) (_ []byte, fresh bool, _ int, ok bool) {
	q := c[0]
	if j := bytes.IndexByte(c[1:], q) + 1; j > 0 {
		// Up to the first quote there is no escape ('' in single quotes,
		// a backslash in double): the value is the text between.
		v := c[1:j]
		if q == '\'' && (j+1 >= len(c) || c[j+1] != '\'') || q == '"' && bytes.IndexByte(v, '\\') < 0 {
			for _, ch := range v {
				if ch < 0x20 && ch != '\t' || ch == 0x7f {
					return nil, false, 0, false
				}
			}
			return v, false, j + 1, utf8.Valid(v)
		}
	}
	b := make([]byte, 0, len(c))
	for i := 1; i < len(c); i++ {
		ch := c[i]
		switch {
		case q == '\'' && ch == '\'':
			if i+1 < len(c) && c[i+1] == '\'' {
				b = append(b, '\'')
				i++
				continue
			}
			return b, true, i + 1, utf8.Valid(b)
		case q == '"' && ch == '"':
			return b, true, i + 1, utf8.Valid(b)
		case q == '"' && ch == '\\':
			if i+1 >= len(c) {
				return nil, false, 0, false
			}
			i++
			switch e := c[i]; e {
			case '0':
				b = append(b, 0)
			case 'a':
				b = append(b, '\a')
			case 'b':
				b = append(b, '\b')
			case 't', '\t':
				b = append(b, '\t')
			case 'n':
				b = append(b, '\n')
			case 'v':
				b = append(b, '\v')
			case 'f':
				b = append(b, '\f')
			case 'r':
				b = append(b, '\r')
			case 'e':
				b = append(b, 0x1b)
			case ' ', '"', '\'', '\\':
				b = append(b, e)
			case 'N':
				b = utf8.AppendRune(b, 0x85)
			case '_':
				b = utf8.AppendRune(b, 0xA0)
			case 'L':
				b = utf8.AppendRune(b, 0x2028)
			case 'P':
				b = utf8.AppendRune(b, 0x2029)
			case 'x', 'u', 'U':
				w := map[byte]int{'x': 2, 'u': 4, 'U': 8}[e]
				if i+w >= len(c) {
					return nil, false, 0, false
				}
				r, err := strconv.ParseUint(string(c[i+1:i+1+w]), 16, 32)
				if err != nil || r > utf8.MaxRune || r >= 0xD800 && r <= 0xDFFF {
					return nil, false, 0, false
				}
				b = utf8.AppendRune(b, rune(r))
				i += w
			default:
				return nil, false, 0, false
			}
		default:
			if ch < 0x20 && ch != '\t' || ch == 0x7f {
				return nil, false, 0, false
			}
			b = append(b, ch)
		}
	}
	return nil, false, 0, false
}
