package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"unicode/utf8"
)

// Kind is the JSON type of a field.
type Kind string

// Field kinds.
const (
	KindString  Kind = "string"
	KindInteger Kind = "integer"
	KindBoolean Kind = "boolean"
	KindObject  Kind = "object"
	KindArray   Kind = "array"
)

// Field is one field of a definition, derived from its Go struct field.
type Field struct {
	Name     string
	Kind     Kind
	Doc      string
	Optional bool     // omitempty: may be absent
	Nullable bool     // may be null
	NonEmpty bool     // a string that must not be empty
	Enum     []string // legal string values
	Const    string   // JSON text the value must equal
	Items    *Field   // element of an array
	Object   []Field  // fields of an array element that is a struct
	index    int      // Go struct field index
}

var rawMessageType = reflect.TypeOf(json.RawMessage(nil))

func fieldsOf(t reflect.Type) []Field {
	var out []Field
	for i := range t.NumField() {
		sf := t.Field(i)
		if !sf.IsExported() {
			continue // not on the wire (MessageDone's encoding kept beside its text)
		}
		tag := sf.Tag.Get("json")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "" || name == "-" {
			panic(fmt.Sprintf("wire: %s.%s has no json name", t.Name(), sf.Name))
		}
		f := kindOf(sf.Type, t.Name()+"."+sf.Name)
		f.Name = name
		f.Doc = sf.Tag.Get("doc")
		f.Optional = opts == "omitempty"
		f.NonEmpty = sf.Tag.Get("nonempty") == "true"
		f.Const = sf.Tag.Get("const")
		if e := sf.Tag.Get("enum"); e != "" {
			f.Enum = strings.Split(e, ",")
		}
		f.index = i
		out = append(out, f)
	}
	return out
}

func kindOf(t reflect.Type, where string) Field {
	switch {
	case t == rawMessageType:
		return Field{Kind: KindObject}
	case t.Kind() == reflect.String:
		return Field{Kind: KindString}
	case t.Kind() == reflect.Int:
		return Field{Kind: KindInteger}
	case t.Kind() == reflect.Bool:
		return Field{Kind: KindBoolean}
	case t.Kind() == reflect.Pointer && t.Elem().Kind() == reflect.Int:
		return Field{Kind: KindInteger, Nullable: true}
	case t.Kind() == reflect.Slice:
		item := kindOf(t.Elem(), where+"[]")
		f := Field{Kind: KindArray, Items: &item}
		return f
	case t.Kind() == reflect.Struct:
		return Field{Kind: KindObject, Object: fieldsOf(t)}
	}
	panic(fmt.Sprintf("wire: %s has unsupported type %s", where, t))
}

// jsonKind names the JSON type of a raw value by its first byte.
func jsonKind(raw json.RawMessage) string {
	raw = raw[skipSpace(raw, 0):] // on every line: no bytes.TrimLeft set to build
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '"':
		return "string"
	case '{':
		return "object"
	case '[':
		return "array"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	default:
		return "number"
	}
}

// checkValue reports whether raw is a legal value for f, naming the problem.
func checkValue(f *Field, raw json.RawMessage) error {
	got := jsonKind(raw)
	if got == "null" {
		if f.Nullable {
			return nil
		}
		return fmt.Errorf("%q must be %s, got null", f.Name, article(f.Kind))
	}
	switch f.Kind {
	case KindString:
		if got != "string" {
			return fmt.Errorf("%q must be a string, got %s", f.Name, got)
		}
		if f.NonEmpty || f.Enum != nil {
			s := unquote(raw)
			if f.NonEmpty && s == "" {
				return fmt.Errorf("%q must not be empty", f.Name)
			}
			if f.Enum != nil && !contains(f.Enum, s) {
				return fmt.Errorf("%q must be one of %s, got %s", f.Name, strings.Join(f.Enum, ", "), quoteShort(s))
			}
		}
	case KindInteger:
		if got != "number" {
			return fmt.Errorf("%q must be an integer, got %s", f.Name, got)
		}
		n, ok := parseInt(raw)
		if !ok {
			return fmt.Errorf("%q must be an integer, got %s", f.Name, bytes.TrimSpace(raw))
		}
		if n < 0 {
			return fmt.Errorf("%q must not be negative, got %d", f.Name, n)
		}
	case KindBoolean:
		if got != "boolean" {
			return fmt.Errorf("%q must be a boolean, got %s", f.Name, got)
		}
	case KindObject:
		if got != "object" {
			return fmt.Errorf("%q must be an object, got %s", f.Name, got)
		}
		if f.Object != nil {
			o, err := parseObject(raw)
			if err != nil {
				return fmt.Errorf("%q: %w", f.Name, err)
			}
			if err := checkFields(f.Object, o); err != nil {
				return fmt.Errorf("%q: %w", f.Name, err)
			}
		}
	case KindArray:
		if got != "array" {
			return fmt.Errorf("%q must be an array, got %s", f.Name, got)
		}
		items := splitArray(raw)
		if f.Optional && len(items) == 0 {
			return fmt.Errorf("%q must be omitted rather than empty", f.Name)
		}
		item := *f.Items
		for i, it := range items {
			item.Name = fmt.Sprintf("%s[%d]", f.Name, i)
			if err := checkValue(&item, it); err != nil {
				return err
			}
		}
	}
	if f.Const != "" && !jsonEqual(raw, []byte(f.Const)) {
		return fmt.Errorf("%q must be %s, got %s", f.Name, f.Const, bytes.TrimSpace(raw))
	}
	return nil
}

// checkFields checks an object's members against fields: each required field
// present, each present field legal, and no member outside the definition.
// extra names members allowed beyond fields (session_id, type).
func checkFields(fields []Field, o object, extra ...string) error {
	for i := range fields {
		f := &fields[i]
		raw, ok := o.get(f.Name)
		if !ok {
			if f.Optional {
				continue
			}
			return fmt.Errorf("missing %q", f.Name)
		}
		if err := checkValue(f, raw); err != nil {
			return err
		}
	}
	for _, m := range o {
		if k := string(m.key); !hasField(fields, k) && !contains(extra, k) {
			return fmt.Errorf("unexpected field %s", quoteShort(k))
		}
	}
	return nil
}

func hasField(fields []Field, name string) bool {
	for i := range fields {
		if fields[i].Name == name {
			return true
		}
	}
	return false
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func article(k Kind) string {
	if k == KindInteger || k == KindObject || k == KindArray {
		return "an " + string(k)
	}
	return "a " + string(k)
}

func jsonEqual(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

// quoteShort quotes s for an error message, cutting it to a readable length.
func quoteShort(s string) string {
	const max = 64
	if len(s) > max {
		cut := max
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		return fmt.Sprintf("%q…", s[:cut])
	}
	return fmt.Sprintf("%q", s)
}
