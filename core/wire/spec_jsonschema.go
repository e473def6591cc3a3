package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
)

// jsonSchemaDialect is the JSON Schema draft WriteJSONSchema targets.
const jsonSchemaDialect = "https://json-schema.org/draft/2020-12/schema"

// WriteJSONSchema writes one JSON Schema (draft 2020-12) document covering
// both directions of the protocol: $defs holds a schema per command, event
// and other line, plus "stdin" and "stdout" unions of them; the document
// itself accepts any line of either direction. Stdout schemas reject
// undefined members; command schemas allow them, since openmax ignores
// them. The output is indented by two spaces and the same on every call.
func WriteJSONSchema(w io.Writer) error {
	defs := jsonObject{}
	var stdin, stdout []any
	for _, d := range Commands {
		stdin = append(stdin, schemaRef(schemaDefKey(d)))
	}
	for _, d := range Events {
		stdout = append(stdout, schemaRef(schemaDefKey(d)))
	}
	for _, d := range Lines {
		stdout = append(stdout, schemaRef(schemaDefKey(d)))
	}
	defs = defs.set("stdin", jsonObject{}.
		set("description", "A line a client writes to openmax's stdin.").
		set("oneOf", stdin))
	defs = defs.set("stdout", jsonObject{}.
		set("description", "A line openmax writes to its stdout: an event or another line.").
		set("oneOf", stdout))
	for _, group := range [][]*Def{Commands, Events, Lines} {
		for _, d := range group {
			sch, err := schemaOfDef(d)
			if err != nil {
				return err
			}
			defs = defs.set(schemaDefKey(d), sch)
		}
	}

	doc := jsonObject{}.
		set("$schema", jsonSchemaDialect).
		set("title", Proto).
		set("description", fmt.Sprintf("One line of the %s protocol, in either direction: a command on stdin or a line on stdout. Each line is a single JSON object.", Proto)).
		set("oneOf", []any{schemaRef("stdin"), schemaRef("stdout")}).
		set("$defs", defs)

	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return fmt.Errorf("wire: json schema: %w", err)
	}
	_, err := w.Write(buf.Bytes())
	return err
}

// schemaDefKey is a definition's name within $defs. Roles get their own prefix
// because a command and a line may share a name (approval_mode does).
func schemaDefKey(d *Def) string {
	switch d.Role {
	case RoleCommand:
		return "command." + d.Name
	case RoleEvent:
		return "event." + d.Name
	}
	return "line." + d.Name
}

func schemaRef(key string) jsonObject {
	return jsonObject{}.set("$ref", "#/$defs/"+key)
}

func schemaOfDef(d *Def) (jsonObject, error) {
	props := jsonObject{}
	var required []string
	closed := d.Role != RoleCommand
	switch d.Role {
	case RoleCommand:
		props = props.set("cmd", jsonObject{}.
			set("description", "selects the command").
			set("const", d.Name))
		required = append(required, "cmd")
	case RoleEvent:
		if !hasField(d.Fields, "session_id") {
			props = props.set("session_id", jsonObject{}.
				set("description", "the session this event belongs to, as announced by hello").
				set("type", "string").
				set("minLength", 1))
			required = append(required, "session_id")
		}
		props = props.set("type", jsonObject{}.
			set("description", "the event type").
			set("const", d.Name))
		required = append(required, "type")
	default:
		props = props.set("type", jsonObject{}.
			set("description", "the line type").
			set("const", d.Name))
		required = append(required, "type")
		if d.SessionID && !hasField(d.Fields, "session_id") {
			props = props.set("session_id", jsonObject{}.
				set("description", "the session").
				set("type", "string").
				set("minLength", 1))
			required = append(required, "session_id")
		}
	}
	fprops, freq, err := schemaOfFields(d.Fields, closed)
	if err != nil {
		return nil, fmt.Errorf("wire: json schema for %s: %w", d.Name, err)
	}
	props = append(props, fprops...)
	required = append(required, freq...)

	sch := jsonObject{}.
		set("title", d.Name).
		set("description", d.Doc).
		set("type", "object").
		set("properties", props).
		set("required", required)
	if closed {
		sch = sch.set("additionalProperties", false)
	}
	return sch, nil
}

// schemaOfFields returns the properties and required names for fields.
// closed marks objects that may carry no undefined members.
func schemaOfFields(fields []Field, closed bool) (jsonObject, []string, error) {
	props := jsonObject{}
	required := []string{}
	for i := range fields {
		f := &fields[i]
		sch, err := schemaOfField(f, closed)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", f.Name, err)
		}
		props = props.set(f.Name, sch)
		if !f.Optional {
			required = append(required, f.Name)
		}
	}
	return props, required, nil
}

func schemaOfField(f *Field, closed bool) (jsonObject, error) {
	sch := jsonObject{}
	if f.Doc != "" {
		sch = sch.set("description", f.Doc)
	}
	if f.Nullable {
		sch = sch.set("type", []string{string(f.Kind), "null"})
	} else {
		sch = sch.set("type", string(f.Kind))
	}
	switch f.Kind {
	case KindString:
		if f.NonEmpty {
			sch = sch.set("minLength", 1)
		}
	case KindInteger:
		sch = sch.set("minimum", 0)
	case KindArray:
		if f.Items == nil {
			return nil, fmt.Errorf("array without an item type")
		}
		items, err := schemaOfField(f.Items, closed)
		if err != nil {
			return nil, err
		}
		sch = sch.set("items", items)
		if f.Optional {
			sch = sch.set("minItems", 1)
		}
	case KindObject:
		if f.Object != nil {
			props, req, err := schemaOfFields(f.Object, closed)
			if err != nil {
				return nil, err
			}
			sch = sch.set("properties", props).set("required", req)
			if closed {
				sch = sch.set("additionalProperties", false)
			}
		}
	}
	if len(f.Enum) > 0 {
		enum := make([]any, 0, len(f.Enum)+1)
		for _, e := range f.Enum {
			enum = append(enum, e)
		}
		if f.Nullable {
			enum = append(enum, nil)
		}
		sch = sch.set("enum", enum)
	}
	if f.Const != "" {
		if !json.Valid([]byte(f.Const)) {
			return nil, fmt.Errorf("const %s is not JSON", strconv.Quote(f.Const))
		}
		sch = sch.set("const", json.RawMessage(f.Const))
	}
	return sch, nil
}

// jsonObject is a JSON object that keeps its members in insertion order.
type jsonObject []jsonMember

type jsonMember struct {
	key string
	val any
}

// set returns o with key set to val, replacing an existing member in place.
func (o jsonObject) set(key string, val any) jsonObject {
	for i := range o {
		if o[i].key == key {
			o[i].val = val
			return o
		}
	}
	return append(o, jsonMember{key, val})
}

// MarshalJSON writes the members in order.
func (o jsonObject) MarshalJSON() ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteByte('{')
	for i, m := range o {
		if i > 0 {
			buf.WriteByte(',')
		}
		k, err := marshalNoEscape(m.key)
		if err != nil {
			return nil, err
		}
		buf.Write(k)
		buf.WriteByte(':')
		v, err := marshalNoEscape(m.val)
		if err != nil {
			return nil, err
		}
		buf.Write(v)
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// marshalNoEscape is json.Marshal without HTML escaping.
func marshalNoEscape(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
