package wire

import (
	"bytes"
	"fmt"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// The checker's allocation-free fast paths. Each one decides only the
// common, well-formed case and leaves everything else to the shared code in
// fields.go and object.go, so every message stays the one those produce.
// All of them assume the line is valid UTF-8, which Checker.line checks
// first.

// plainString returns the contents of raw when it is a JSON string without
// escapes: then its bytes are its value. known says the split already found
// it so.
func plainString(raw []byte, known bool) ([]byte, bool) {
	if known {
		return raw[1 : len(raw)-1], true
	}
	if len(raw) < 2 || raw[0] != '"' || bytes.IndexByte(raw, '\\') >= 0 {
		return nil, false
	}
	return raw[1 : len(raw)-1], true
}

// strEq reports whether raw, a string member of a checked line or nothing,
// decodes to s; a missing member (nil raw) or a non-string is "", as
// object.str has it.
func (c *Checker) strEq(raw []byte, known bool, s string) bool {
	if c.twoPass {
		return object{{key: []byte("v"), raw: raw}}.str("v") == s
	}
	if len(raw) == 0 || raw[0] != '"' {
		return s == ""
	}
	if p, ok := plainString(raw, known); ok {
		return string(p) == s
	}
	c.scratch = appendUnquoted(c.scratch[:0], raw)
	return string(c.scratch) == s
}

// appendValue appends the value of raw, a string member of a checked line,
// to b; scratch is reused for decoding escapes and returned.
func (c *Checker) appendValue(b *strings.Builder, raw []byte, known bool) {
	if c.twoPass {
		b.WriteString(object{{key: []byte("v"), raw: raw}}.str("v"))
		return
	}
	c.scratch = appendValue(b, raw, known, c.scratch)
}

func appendValue(b *strings.Builder, raw []byte, known bool, scratch []byte) []byte {
	if p, ok := plainString(raw, known); ok {
		b.Write(p)
		return scratch
	}
	scratch = appendUnquoted(scratch[:0], raw)
	b.Write(scratch)
	return scratch
}

// plainValue reports whether raw is certainly legal for f, deciding only
// cases that need no decoding: an unescaped string (non-empty or in the enum
// when f says so), a plain non-negative integer, a boolean, a null where f
// allows one. false means "ask checkValue", not "illegal".
func plainValue(f *Field, raw []byte, known bool) bool {
	if f.Const != "" || len(raw) == 0 {
		return false
	}
	switch f.Kind {
	case KindString:
		s, ok := plainString(raw, known)
		if !ok || (f.NonEmpty && len(s) == 0) {
			return false
		}
		if f.Enum == nil {
			return true
		}
		for _, e := range f.Enum {
			if e == string(s) {
				return true
			}
		}
		return false
	case KindInteger:
		if raw[0] == 'n' {
			return f.Nullable && string(raw) == "null"
		}
		if len(raw) > 18 {
			return false
		}
		for _, b := range raw {
			if b < '0' || b > '9' {
				return false
			}
		}
		return true
	case KindBoolean:
		return string(raw) == "true" || string(raw) == "false"
	}
	return false
}

// checkLineFields is checkFields (fields.go) for the checker's hot path:
// the same checks in the same order with the same messages, without
// converting member names to strings. Unknown members are a violation only
// when strict.
func checkLineFields(fields []Field, o object, extra []string, strict bool) error {
	for i := range fields {
		f := &fields[i]
		raw, known, ok := o.getv(f.Name)
		if !ok {
			if f.Optional {
				continue
			}
			return fmt.Errorf("missing %q", f.Name)
		}
		if plainValue(f, raw, known) {
			continue
		}
		if err := checkValue(f, raw); err != nil {
			return err
		}
	}
	for _, m := range o {
		if strict && !knownMember(fields, extra, m.key) {
			return fmt.Errorf("unexpected field %s", quoteShort(string(m.key)))
		}
	}
	return nil
}

func knownMember(fields []Field, extra []string, key []byte) bool {
	for i := range fields {
		if fields[i].Name == string(key) {
			return true
		}
	}
	for _, x := range extra {
		if x == string(key) {
			return true
		}
	}
	return false
}

// appendUnquoted appends the value of raw, a valid JSON string literal from
// a valid UTF-8 line, to dst, decoding escapes the way encoding/json does
// (a \u escape that is a lone or mismatched surrogate becomes U+FFFD).
func appendUnquoted(dst, raw []byte) []byte {
	s := raw[1 : len(raw)-1]
	for {
		k := bytes.IndexByte(s, '\\')
		if k < 0 {
			return append(dst, s...)
		}
		dst = append(dst, s[:k]...)
		s = s[k:]
		switch c := s[1]; c {
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			r := hex4(s[2:6])
			s = s[6:]
			if utf16.IsSurrogate(r) {
				r2 := rune(-1)
				if len(s) >= 6 && s[0] == '\\' && s[1] == 'u' {
					r2 = hex4(s[2:6])
				}
				if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
					s = s[6:]
					r = dec
				} else {
					r = utf8.RuneError
				}
			}
			dst = utf8.AppendRune(dst, r)
			continue
		default: // '"', '\\', '/'
			dst = append(dst, c)
		}
		s = s[2:]
	}
}

// hex4 reads four hex digits (already checked by the scan).
func hex4(h []byte) rune {
	var r rune
	for _, c := range h[:4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		default:
			c = c - 'A' + 10
		}
		r = r<<4 | rune(c)
	}
	return r
}
