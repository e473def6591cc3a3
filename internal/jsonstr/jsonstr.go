// Package jsonstr writes Go strings as JSON string content exactly as
// encoding/json does (invalid UTF-8 as \ufffd, U+2028 and U+2029 escaped,
// and <, > and & escaped when HTML escaping is on), whole or piece by piece.
//
// Escaper is the piece by piece form: a text that arrives in chunks (a
// streamed reply) is encoded as it arrives, and the concatenation of the
// pieces is byte for byte the encoding of the whole text, even when a
// chunk ends inside a multi-byte character. The stdio wire (core/wire)
// and the session files (core/store) both write text this way, so a reply
// streamed into both is encoded once (core/turn.go).
package jsonstr

import "unicode/utf8"

// AppendQuoted appends s as a JSON string, quotes included, as
// encoding/json writes it (with HTML escaping when html is set).
func AppendQuoted(dst []byte, s string, html bool) []byte {
	dst = append(dst, '"')
	dst = AppendContent(dst, s, html)
	return append(dst, '"')
}

// AppendContent appends what AppendQuoted writes between the quotes.
func AppendContent(dst []byte, s string, html bool) []byte {
	safe := &safeASCII
	if html {
		safe = &htmlSafeASCII
	}
	start := 0
	for i := 0; i < len(s); {
		b := s[i]
		if b < utf8.RuneSelf {
			if safe[b] {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '"', '\\':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default: // other control characters, and <, > and & when html
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case c == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
		case c == '\u2028' || c == '\u2029':
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[c&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	return append(dst, s[start:]...)
}

// Escaper encodes a text given in pieces as JSON string content: the
// concatenation of what Append and Flush write is AppendContent of the
// concatenated pieces. A piece ending inside a multi-byte character is
// held back (at most three bytes) until the next piece completes it or
// Flush ends the text. The zero Escaper writes without HTML escaping.
type Escaper struct {
	HTML bool // escape <, > and & as encoding/json's default does

	held [utf8.UTFMax]byte // the start of a character cut by the last piece, and one byte more
	n    int
}

// Append appends the encoding of the next piece s.
func (e *Escaper) Append(dst []byte, s string) []byte {
	for e.n > 0 && len(s) > 0 {
		e.held[e.n] = s[0]
		e.n++
		s = s[1:]
		dst = e.drain(dst)
	}
	if len(s) == 0 {
		return dst
	}
	// Hold back a character the piece cuts: the last character start among
	// its final three bytes, when what follows it is not a whole character.
	// Every character start is a boundary of decoding, so the bytes before
	// it encode the same alone as in the whole text.
	cut := len(s)
	for i := len(s) - 1; i >= 0 && i >= len(s)-(utf8.UTFMax-1); i-- {
		if utf8.RuneStart(s[i]) {
			if !utf8.FullRuneInString(s[i:]) {
				cut = i
			}
			break
		}
	}
	dst = AppendContent(dst, s[:cut], e.HTML)
	e.n = copy(e.held[:], s[cut:])
	return dst
}

// drain encodes the held characters that are whole (or proved invalid),
// leaving held the start of a character still cut, if any.
func (e *Escaper) drain(dst []byte) []byte {
	for e.n > 0 && utf8.FullRune(e.held[:e.n]) {
		_, size := utf8.DecodeRune(e.held[:e.n])
		dst = AppendContent(dst, string(e.held[:size]), e.HTML)
		e.n = copy(e.held[:], e.held[size:e.n])
	}
	return dst
}

// Flush appends what is held back (a text ending inside a character: each
// byte encodes as \ufffd, as in the whole text) and readies the Escaper
// for a new text.
func (e *Escaper) Flush(dst []byte) []byte {
	if e.n > 0 {
		dst = AppendContent(dst, string(e.held[:e.n]), e.HTML)
		e.n = 0
	}
	return dst
}

// safeASCII[b] says whether the ASCII byte b stands for itself inside a
// JSON string as encoding/json writes it with HTML escaping off;
// htmlSafeASCII, with it on (<, > and & escaped too).
var safeASCII, htmlSafeASCII [utf8.RuneSelf]bool

func init() {
	for b := 0x20; b < utf8.RuneSelf; b++ {
		safeASCII[b] = b != '"' && b != '\\'
		htmlSafeASCII[b] = safeASCII[b] && b != '<' && b != '>' && b != '&'
	}
}

const hexDigits = "0123456789abcdef"
