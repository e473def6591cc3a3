package importer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// maxJSONDepth bounds the nesting of a parsed body (and so an alias
// cycle).
const maxJSONDepth = 1000

// jsonNumber is JSON's number syntax.
var jsonNumber = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$`) })

// parsedBody turns a parsed body n, with the headers h of its message,
// into JSON text. A parsed body is a JSON body that the recording tool
// stored as a YAML structure rather than as text: pydantic-ai's vcrpy
// serializer, for one, replaces a JSON body with a parsed_body mapping
// (its own loader turns it back into text with Python's json.dumps).
// This is what the text keeps of what went over the wire, and what not:
//
//   - The value is the same JSON value: the same members with the same
//     values, strings exactly as the YAML holds them, and numbers spelled
//     as the YAML spells them whenever that is JSON number syntax (1.0
//     stays 1.0); only YAML-only spellings (0x1F, 1_000, .5) are
//     rewritten, as the number they denote.
//   - Member order is the order the file lists them in. The recording
//     tool may have changed it (pydantic-ai's serializer writes YAML with
//     sorted keys), so it is not necessarily the order that went over the
//     wire. Replay matching compares JSON bodies structurally, so order
//     never affects a match.
//   - Whitespace is not recorded. The text is compact JSON, or JSON
//     indented by two spaces when that is the length the recorded
//     Content-Length gives (OpenAI sends its error bodies so); with
//     neither, Content-Length is set to the new text's length, so the
//     message stays self-consistent.
//   - Non-ASCII characters are written as UTF-8 and only what JSON
//     requires is escaped, where the sender may have used \u escapes.
//
// A value JSON cannot hold (a YAML !!binary or !!timestamp, an infinite
// or NaN float, a custom tag, a merge key) is refused with an error
// naming the line, never dropped.
//
// It returns the text and whether h's Content-Length no longer describes
// it (the caller then sets it).
func parsedBody(n *yaml.Node, h http.Header) ([]byte, bool, error) {
	var buf bytes.Buffer
	if err := writeJSON(&buf, n, 0); err != nil {
		return nil, false, err
	}
	compact := buf.Bytes()
	cl := strings.TrimSpace(h.Get("Content-Length"))
	if cl == "" || cl == strconv.Itoa(len(compact)) {
		return compact, false, nil
	}
	var indented bytes.Buffer
	if err := json.Indent(&indented, compact, "", "  "); err == nil && cl == strconv.Itoa(indented.Len()) {
		return indented.Bytes(), false, nil
	}
	return compact, true, nil
}

// writeJSON writes the JSON form of n.
func writeJSON(buf *bytes.Buffer, n *yaml.Node, depth int) error {
	if depth > maxJSONDepth {
		return fmt.Errorf("line %d: nested more than %d deep (an alias cycle?)", n.Line, maxJSONDepth)
	}
	switch n.Kind {
	case yaml.AliasNode:
		return writeJSON(buf, n.Alias, depth+1)
	case yaml.MappingNode:
		if tag := n.ShortTag(); tag != "!!map" {
			return fmt.Errorf("line %d: a YAML %s mapping has no JSON form", n.Line, tag)
		}
		buf.WriteByte('{')
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Kind == yaml.AliasNode {
				k = k.Alias
			}
			if k.Kind != yaml.ScalarNode {
				return fmt.Errorf("line %d: a %s as a mapping key has no JSON form", k.Line, kindName(k.Kind))
			}
			if k.ShortTag() == "!!merge" {
				return fmt.Errorf("line %d: a YAML merge key (<<) has no JSON form", k.Line)
			}
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := writeString(buf, k.Value); err != nil {
				return fmt.Errorf("line %d: %w", k.Line, err)
			}
			buf.WriteByte(':')
			if err := writeJSON(buf, v, depth+1); err != nil {
				return err
			}
		}
		buf.WriteByte('}')
		return nil
	case yaml.SequenceNode:
		if tag := n.ShortTag(); tag != "!!seq" {
			return fmt.Errorf("line %d: a YAML %s sequence has no JSON form", n.Line, tag)
		}
		buf.WriteByte('[')
		for i, v := range n.Content {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := writeJSON(buf, v, depth+1); err != nil {
				return err
			}
		}
		buf.WriteByte(']')
		return nil
	case yaml.ScalarNode:
		return writeScalar(buf, n)
	}
	return fmt.Errorf("line %d: unexpected YAML %s", n.Line, kindName(n.Kind))
}

func writeScalar(buf *bytes.Buffer, n *yaml.Node) error {
	switch tag := n.ShortTag(); tag {
	case "!!str":
		if err := writeString(buf, n.Value); err != nil {
			return fmt.Errorf("line %d: %w", n.Line, err)
		}
	case "!!null":
		buf.WriteString("null")
	case "!!bool":
		var b bool
		if err := n.Decode(&b); err != nil {
			return fmt.Errorf("line %d: %w", n.Line, err)
		}
		buf.WriteString(strconv.FormatBool(b))
	case "!!int":
		if jsonNumber().MatchString(n.Value) {
			buf.WriteString(n.Value)
			return nil
		}
		var i int64
		if err := n.Decode(&i); err == nil {
			buf.WriteString(strconv.FormatInt(i, 10))
			return nil
		}
		var u uint64
		if err := n.Decode(&u); err != nil {
			return fmt.Errorf("line %d: the integer %s: %w", n.Line, n.Value, err)
		}
		buf.WriteString(strconv.FormatUint(u, 10))
	case "!!float":
		if jsonNumber().MatchString(n.Value) {
			buf.WriteString(n.Value)
			return nil
		}
		var f float64
		if err := n.Decode(&f); err != nil {
			return fmt.Errorf("line %d: the number %s: %w", n.Line, n.Value, err)
		}
		if math.IsInf(f, 0) || math.IsNaN(f) {
			return fmt.Errorf("line %d: %s has no JSON form", n.Line, n.Value)
		}
		buf.WriteString(strconv.FormatFloat(f, 'g', -1, 64))
	default:
		return fmt.Errorf("line %d: a YAML %s value has no JSON form", n.Line, tag)
	}
	return nil
}

// writeString writes s as a JSON string, escaping only what JSON needs
// (and U+2028, U+2029, as encoding/json does).
func writeString(buf *bytes.Buffer, s string) error {
	if !utf8.ValidString(s) {
		return fmt.Errorf("the string %.40q is not UTF-8, which JSON text must be", s)
	}
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)           // a string always encodes
	buf.Truncate(buf.Len() - 1) // the newline Encode adds
	return nil
}

// errBothBodies reports a message with a body and a parsed_body that say
// different things.
var errBothBodies = errors.New("both a body and a parsed_body, which differ")

// sameJSON reports whether a and b are JSON texts of the same value.
func sameJSON(a, b []byte) bool {
	var va, vb any
	da, db := json.NewDecoder(bytes.NewReader(a)), json.NewDecoder(bytes.NewReader(b))
	da.UseNumber()
	db.UseNumber()
	if da.Decode(&va) != nil || db.Decode(&vb) != nil {
		return false
	}
	return reflect.DeepEqual(va, vb)
}
