package wire

import (
	"reflect"
	"slices"
	"strconv"
	"sync"

	"github.com/openmax/openmax/internal/jsonstr"
)

// The fast path of the emitter. Every event and line whose fields are all
// scalars (string, int, *int, bool) is encoded by a plan derived from its
// Def, field by field, straight into the caller's buffer: no reflection
// through encoding/json, no allocation. The output is byte for byte what
// the reflective path (appendFieldsReflect) writes for the same value; the
// property test in encode_fast_test.go holds the two together. A type with
// an array or object field is left to the reflective path.

// plan encodes one Go type: its line's type member, then its fields.
type plan struct {
	typ    reflect.Type
	member string // `,"type":"token"`: what follows an event's session_id
	fields []planField
}

// planField is one field of a plan.
type planField struct {
	key   string // `"name":`
	index int    // Go struct field index
	kind  planKind
	omit  bool // omitempty: left out when zero
}

type planKind uint8

const (
	planString planKind = iota
	planInt
	planNullableInt
	planBool
)

// plans returns the plan of every Def that has one, events first in their
// definition order (token leads), so the lookup of the busiest types is the
// shortest. It is built on first use (the Defs' fields are derived at init)
// and only read afterwards.
var plans = sync.OnceValue(func() []*plan {
	var ps []*plan
	for _, defs := range [][]*Def{Events, Lines} {
		for _, d := range defs {
			if p := planOf(d); p != nil {
				ps = append(ps, p)
			}
		}
	}
	return ps
})

// planFor returns the plan of t, or nil.
func planFor(t reflect.Type) *plan {
	for _, p := range plans() {
		if p.typ == t {
			return p
		}
	}
	return nil
}

// planOf returns the plan for d's fields, or nil when a field is not a
// scalar the plan encodes the way encoding/json does.
func planOf(d *Def) *plan {
	t := reflect.TypeOf(d.Proto)
	p := &plan{typ: t, member: `,"type":` + string(appendQuoted(nil, d.Name, true))}
	for _, f := range d.Fields {
		ft := t.Field(f.index).Type
		pf := planField{key: string(appendQuoted(nil, f.Name, true)) + ":", index: f.index, omit: f.Optional}
		switch {
		case f.Kind == KindString && ft.Kind() == reflect.String:
			pf.kind = planString
		case f.Kind == KindInteger && !f.Nullable && ft.Kind() == reflect.Int:
			pf.kind = planInt
		case f.Kind == KindInteger && f.Nullable && ft.Kind() == reflect.Pointer && ft.Elem().Kind() == reflect.Int:
			pf.kind = planNullableInt
		case f.Kind == KindBoolean && ft.Kind() == reflect.Bool:
			pf.kind = planBool
		default:
			return nil
		}
		p.fields = append(p.fields, pf)
	}
	return p
}

// appendFieldsFast appends v's fields and the closing brace and newline,
// as appendFields does, and reports false (appending nothing) when v's type
// has no plan.
func appendFieldsFast(dst []byte, v any) ([]byte, bool) {
	p := planFor(reflect.TypeOf(v))
	if p == nil {
		return dst, false
	}
	return p.appendFields(dst, v), true
}

// appendFields appends v's fields, the closing brace and the newline; v's
// type is p's.
func (p *plan) appendFields(dst []byte, v any) []byte {
	rv := reflect.ValueOf(v)
	for i := range p.fields {
		f := &p.fields[i]
		fv := rv.Field(f.index)
		switch f.kind {
		case planString:
			s := fv.String()
			if f.omit && s == "" {
				continue
			}
			dst = slices.Grow(dst, 1+len(f.key)+len(s)+2) // one copy of a long text, not a doubling series
			dst = append(dst, ',')
			dst = append(dst, f.key...)
			dst = appendQuoted(dst, s, false)
		case planInt:
			n := fv.Int()
			if f.omit && n == 0 {
				continue
			}
			dst = append(dst, ',')
			dst = append(dst, f.key...)
			dst = strconv.AppendInt(dst, n, 10)
		case planNullableInt:
			if fv.IsNil() {
				if f.omit {
					continue
				}
				dst = append(dst, ',')
				dst = append(dst, f.key...)
				dst = append(dst, "null"...)
				continue
			}
			dst = append(dst, ',')
			dst = append(dst, f.key...)
			dst = strconv.AppendInt(dst, fv.Elem().Int(), 10)
		case planBool:
			b := fv.Bool()
			if f.omit && !b {
				continue
			}
			dst = append(dst, ',')
			dst = append(dst, f.key...)
			dst = strconv.AppendBool(dst, b)
		}
	}
	return append(dst, '}', '\n')
}

// textPlans are the plans of the events that carry one text and nothing
// else, the bulk of a stream: they skip the plan lookup and reflection.
var textPlans = sync.OnceValue(func() (ps struct{ token, thinking, messageDone *plan }) {
	single := func(e Event) *plan {
		p := planFor(reflect.TypeOf(e))
		if p == nil || len(p.fields) != 1 || p.fields[0].kind != planString || p.fields[0].omit {
			return nil // the type changed shape: the generic path takes it
		}
		return p
	}
	ps.token, ps.thinking, ps.messageDone = single(Token{}), single(Thinking{}), single(MessageDone{})
	return ps
})

// appendText appends what follows session_id on the line of a text event
// whose plan is p: its type member, its one field holding text, the end.
func appendText(dst []byte, p *plan, text string) []byte {
	f := &p.fields[0]
	dst = slices.Grow(dst, len(p.member)+1+len(f.key)+len(text)+4)
	dst = append(dst, p.member...)
	dst = append(dst, ',')
	dst = append(dst, f.key...)
	dst = appendQuoted(dst, text, false)
	return append(dst, '}', '\n')
}

// appendQuotedText is appendText for a text given already encoded as JSON
// string content, in pieces (MessageDoneQuoted).
func appendQuotedText(dst []byte, p *plan, quoted [][]byte) []byte {
	n := 0
	for _, q := range quoted {
		n += len(q)
	}
	dst = slices.Grow(dst, len(p.member)+len(p.fields[0].key)+n+5)
	dst = appendQuotedHead(dst, p)
	for _, q := range quoted {
		dst = append(dst, q...)
	}
	return append(dst, quotedTail...)
}

// appendQuotedHead appends what precedes the text's encoding in the line
// of a text event whose plan is p, after session_id: its type member and
// its field's key and opening quote. quotedTail follows the encoding.
func appendQuotedHead(dst []byte, p *plan) []byte {
	dst = append(dst, p.member...)
	dst = append(dst, ',')
	dst = append(dst, p.fields[0].key...)
	return append(dst, '"')
}

// quotedTail ends the line of a text event after its text's encoding.
const quotedTail = "\"}\n"

// appendEventAfterID appends what follows an event line's session_id
// value: its type member and its fields, as AppendEvent does.
func appendEventAfterID(dst []byte, e Event) ([]byte, error) {
	var text *plan
	var s string
	switch e := e.(type) {
	case Token:
		text, s = textPlans().token, e.Text
	case Thinking:
		text, s = textPlans().thinking, e.Text
	case MessageDone:
		text, s = textPlans().messageDone, e.Text
		if text != nil && e.quoted != nil {
			return appendQuotedText(dst, text, *e.quoted), nil
		}
	}
	if text != nil {
		return appendText(dst, text, s), nil
	}
	if p := planFor(reflect.TypeOf(e)); p != nil {
		return p.appendFields(append(dst, p.member...), e), nil
	}
	dst = append(dst, `,"type":`...)
	dst = appendString(dst, e.EventType())
	return appendFieldsReflect(dst, e)
}

// appendQuoted appends s as a JSON string exactly as encoding/json encodes
// it (internal/jsonstr), with HTML escaping when html is set.
func appendQuoted(dst []byte, s string, html bool) []byte {
	return jsonstr.AppendQuoted(dst, s, html)
}
