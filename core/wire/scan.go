package wire

import (
	"encoding/binary"
	"unicode/utf8"
)

// This file is the single-pass reader behind parseObject: it checks JSON
// syntax and splits a line's top-level members in the same walk over the
// bytes, instead of running json.Valid first and splitting afterwards.
//
// It only has to be sound: whatever it accepts, json.Valid accepts, and the
// members it returns are the ones the two-pass split returned. Anything it
// does not accept (bad syntax, a duplicate key, deep nesting, not an object)
// goes to the two-pass path, which names the problem exactly as before, so
// error messages do not depend on this code.

// maxScanDepth bounds the nesting the fast path follows; deeper documents
// take the two-pass path (encoding/json allows 10000 levels).
const maxScanDepth = 256

// strPlain marks the bytes a JSON string holds as they are: everything
// from 0x20 up except the quote and the backslash.
var strPlain = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

var hexDigit = func() (t [256]bool) {
	for _, c := range "0123456789abcdefABCDEF" {
		t[c] = true
	}
	return t
}()

// splitObject appends the members of data, which must be exactly one JSON
// object with optional surrounding whitespace and no duplicate key, to dst.
// ok is false when data is anything else.
func splitObject(dst object, data []byte) (o object, ok bool) {
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return dst, false
	}
	o = dst
	i = skipSpace(data, i+1)
	if i < len(data) && data[i] == '}' {
		return o, skipSpace(data, i+1) == len(data)
	}
	for {
		if i >= len(data) || data[i] != '"' {
			return o, false
		}
		end, esc, ok := scanStringValid(data, i)
		if !ok {
			return o, false
		}
		key := data[i+1 : end-1]
		if esc || !utf8.Valid(key) {
			key = []byte(unquote(data[i:end]))
		}
		for k := range o[len(dst):] {
			if string(o[len(dst)+k].key) == string(key) {
				return o, false // the two-pass path names the duplicate
			}
		}
		i = skipSpace(data, end)
		if i >= len(data) || data[i] != ':' {
			return o, false
		}
		i = skipSpace(data, i+1)
		plain := false
		if i < len(data) && data[i] == '"' {
			end, esc, ok = scanStringValid(data, i)
			plain = !esc
		} else {
			end, ok = scanValueValid(data, i, 1)
		}
		if !ok {
			return o, false
		}
		o = append(o, member{key: key, raw: data[i:end], plain: plain})
		i = skipSpace(data, end)
		if i >= len(data) {
			return o, false
		}
		switch data[i] {
		case '}':
			return o, skipSpace(data, i+1) == len(data)
		case ',':
			i = skipSpace(data, i+1)
		default:
			return o, false
		}
	}
}

// scanValueValid returns the end of the JSON value starting at i, and
// whether it is one.
func scanValueValid(data []byte, i, depth int) (int, bool) {
	if i >= len(data) {
		return i, false
	}
	switch c := data[i]; {
	case c == '"':
		end, _, ok := scanStringValid(data, i)
		return end, ok
	case c == '{':
		if depth >= maxScanDepth {
			return i, false
		}
		i = skipSpace(data, i+1)
		if i < len(data) && data[i] == '}' {
			return i + 1, true
		}
		for {
			if i >= len(data) || data[i] != '"' {
				return i, false
			}
			end, _, ok := scanStringValid(data, i)
			if !ok {
				return end, false
			}
			i = skipSpace(data, end)
			if i >= len(data) || data[i] != ':' {
				return i, false
			}
			i, ok = scanValueValid(data, skipSpace(data, i+1), depth+1)
			if !ok {
				return i, false
			}
			i = skipSpace(data, i)
			if i >= len(data) {
				return i, false
			}
			switch data[i] {
			case '}':
				return i + 1, true
			case ',':
				i = skipSpace(data, i+1)
			default:
				return i, false
			}
		}
	case c == '[':
		if depth >= maxScanDepth {
			return i, false
		}
		i = skipSpace(data, i+1)
		if i < len(data) && data[i] == ']' {
			return i + 1, true
		}
		for {
			var ok bool
			i, ok = scanValueValid(data, i, depth+1)
			if !ok {
				return i, false
			}
			i = skipSpace(data, i)
			if i >= len(data) {
				return i, false
			}
			switch data[i] {
			case ']':
				return i + 1, true
			case ',':
				i = skipSpace(data, i+1)
			default:
				return i, false
			}
		}
	case c == 't':
		return scanLiteral(data, i, "true")
	case c == 'f':
		return scanLiteral(data, i, "false")
	case c == 'n':
		return scanLiteral(data, i, "null")
	case c == '-' || (c >= '0' && c <= '9'):
		return scanNumberValid(data, i)
	}
	return i, false
}

func scanLiteral(data []byte, i int, lit string) (int, bool) {
	end := i + len(lit)
	if end > len(data) || string(data[i:end]) != lit {
		return i, false
	}
	return end, true
}

// scanNumberValid follows JSON's number grammar:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func scanNumberValid(data []byte, i int) (int, bool) {
	digits := func(j int) int {
		for j < len(data) && data[j] >= '0' && data[j] <= '9' {
			j++
		}
		return j
	}
	if data[i] == '-' {
		i++
	}
	switch {
	case i < len(data) && data[i] == '0':
		i++
	case i < len(data) && data[i] >= '1' && data[i] <= '9':
		i = digits(i + 1)
	default:
		return i, false
	}
	if i < len(data) && data[i] == '.' {
		j := digits(i + 1)
		if j == i+1 {
			return j, false
		}
		i = j
	}
	if i < len(data) && (data[i] == 'e' || data[i] == 'E') {
		i++
		if i < len(data) && (data[i] == '+' || data[i] == '-') {
			i++
		}
		j := digits(i)
		if j == i {
			return j, false
		}
		i = j
	}
	return i, true
}

// scanStringValid returns the index just past the JSON string starting at
// i (data[i] is the quote), whether it holds an escape, and whether it is a
// legal string: closed, no control bytes, only JSON's escapes. Bytes from
// 0x80 up pass as they are, as json.Valid lets them.
func scanStringValid(data []byte, i int) (end int, esc, ok bool) {
	j := i + 1
	for {
		// Eight bytes at a time while none is a quote, a backslash or a
		// control byte, then byte by byte up to the one that is.
		for j+8 <= len(data) && !special8(binary.LittleEndian.Uint64(data[j:])) {
			j += 8
		}
		for j < len(data) && strPlain[data[j]] {
			j++
		}
		if j >= len(data) {
			return j, esc, false
		}
		switch data[j] {
		case '"':
			return j + 1, esc, true
		case '\\':
			esc = true
			if j+1 >= len(data) {
				return j, esc, false
			}
			switch data[j+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				j += 2
			case 'u':
				if j+6 > len(data) || !hexDigit[data[j+2]] || !hexDigit[data[j+3]] ||
					!hexDigit[data[j+4]] || !hexDigit[data[j+5]] {
					return j, esc, false
				}
				j += 6
			default:
				return j, esc, false
			}
		default: // a control byte
			return j, esc, false
		}
	}
}

const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// special8 reports whether any of the eight bytes in w is a quote, a
// backslash or below 0x20. A byte b is below n (n <= 0x80) exactly when
// b-n borrows into its high bit while b's own high bit is clear; a byte is
// zero exactly when it is below 1, so x^(ones*c) finds the bytes equal to c.
// A borrow can only flag bytes above a flagged one, so the answer "any" is
// exact.
func special8(w uint64) bool {
	below := func(x, n uint64) uint64 { return (x - ones*n) &^ x & highs }
	return below(w, 0x20)|below(w^(ones*'"'), 1)|below(w^(ones*'\\'), 1) != 0
}
