package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"
)

// member is one top-level member of a JSON object: its key and the raw
// bytes of its value.
type member struct {
	key []byte // unescaped
	raw json.RawMessage
	// plain is true when raw is known to be a string with no escapes (the
	// single-pass split records it); false means "not known".
	plain bool
}

// object is a JSON object split into its members, in document order. It
// exists so the checker and the command decoder can look at a line's fields
// without decoding the whole line into maps (the checker reads millions of
// lines).
type object []member

var errNotObject = errors.New("not an object")

// parseObject splits data, which must be one JSON object, into members. A
// key given twice is an error.
func parseObject(data []byte) (object, error) {
	return parseObjectInto(make(object, 0, 8), data)
}

// parseObjectInto is parseObject appending to dst, so a caller that reads
// many lines can reuse one slice. Well-formed objects take one pass
// (splitObject); anything else goes through parseObjectTwoPass, which names
// the problem.
func parseObjectInto(dst object, data []byte) (object, error) {
	if o, ok := splitObject(dst[:0], data); ok {
		return o, nil
	}
	return parseObjectTwoPass(data)
}

// parseObjectTwoPass is the original reader: json.Valid over the whole line,
// then a split that trusts it. It is the reference the single pass is
// tested against, and the path that describes every malformed line.
func parseObjectTwoPass(data []byte) (object, error) {
	if !json.Valid(data) {
		var v any
		err := json.Unmarshal(data, &v)
		if err == nil {
			err = errors.New("invalid JSON")
		}
		return nil, err
	}
	i := skipSpace(data, 0)
	if data[i] != '{' {
		return nil, fmt.Errorf("%w: got %s", errNotObject, jsonKind(data))
	}
	i = skipSpace(data, i+1)
	o := make(object, 0, 8)
	if data[i] == '}' {
		return o, nil
	}
	for {
		end := scanValue(data, i) // the key string
		key := data[i+1 : end-1]
		if bytes.IndexByte(key, '\\') >= 0 || !utf8.Valid(key) {
			key = []byte(unquote(data[i:end]))
		}
		if _, dup := o.get(string(key)); dup {
			return nil, fmt.Errorf("duplicate field %s", quoteShort(string(key)))
		}
		i = skipSpace(data, end)
		i = skipSpace(data, i+1) // past ':'
		end = scanValue(data, i)
		o = append(o, member{key: key, raw: data[i:end]})
		i = skipSpace(data, end)
		if data[i] == '}' {
			return o, nil
		}
		i = skipSpace(data, i+1) // past ','
	}
}

// splitArray returns the raw elements of a valid JSON array.
func splitArray(data []byte) []json.RawMessage {
	i := skipSpace(data, 0)
	i = skipSpace(data, i+1)
	var out []json.RawMessage
	if data[i] == ']' {
		return out
	}
	for {
		end := scanValue(data, i)
		out = append(out, data[i:end])
		i = skipSpace(data, end)
		if data[i] == ']' {
			return out
		}
		i = skipSpace(data, i+1)
	}
}

func skipSpace(data []byte, i int) int {
	for i < len(data) {
		switch data[i] {
		case ' ', '\t', '\r', '\n':
			i++
		default:
			return i
		}
	}
	return i
}

// scanValue returns the end of the valid JSON value starting at i.
func scanValue(data []byte, i int) int {
	switch data[i] {
	case '"':
		return scanString(data, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(data); j++ {
			switch data[j] {
			case '"':
				j = scanString(data, j) - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return len(data)
	}
	j := i
	for j < len(data) {
		switch data[j] {
		case ',', '}', ']', ' ', '\t', '\r', '\n':
			return j
		}
		j++
	}
	return j
}

// scanString returns the index just past the string starting at i.
func scanString(data []byte, i int) int {
	for j := i + 1; j < len(data); j++ {
		switch data[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return len(data)
}

// unquote decodes a valid JSON string literal.
func unquote(raw []byte) string {
	if len(raw) >= 2 && bytes.IndexByte(raw, '\\') < 0 && utf8.Valid(raw) {
		return string(raw[1 : len(raw)-1])
	}
	var s string
	_ = json.Unmarshal(raw, &s)
	return s
}

// parseInt reads a JSON number that must be an integer.
func parseInt(raw []byte) (int64, bool) {
	n, err := strconv.ParseInt(string(raw), 10, 64)
	return n, err == nil
}

// getv is get that also says whether the value is known to be a string
// without escapes.
func (o object) getv(k string) (raw json.RawMessage, plain, ok bool) {
	for i := range o {
		if string(o[i].key) == k {
			return o[i].raw, o[i].plain, true
		}
	}
	return nil, false, false
}

func (o object) get(k string) (json.RawMessage, bool) {
	for i := range o {
		if string(o[i].key) == k {
			return o[i].raw, true
		}
	}
	return nil, false
}

// str returns member k as a string, or "" when absent or not a string.
func (o object) str(k string) string {
	raw, ok := o.get(k)
	if !ok || len(raw) == 0 || raw[0] != '"' {
		return ""
	}
	return unquote(raw)
}

// num returns member k as an int, or 0.
func (o object) num(k string) int {
	raw, _ := o.get(k)
	n, _ := parseInt(raw)
	return int(n)
}
