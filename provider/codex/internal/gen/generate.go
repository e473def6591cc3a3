package main

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

type kind int

const (
	kindStruct kind = iota + 1 // an object, or a oneOf/anyOf of objects merged
	kindEnum                   // a string type with a constant per value
	kindRaw                    // json.RawMessage: a mix the Go type system cannot say
)

// goType is one named type of the output.
type goType struct {
	Name   string
	Doc    string
	Origin string // the definition or the place of an inline schema
	Kind   kind
	Fields []*field     // kindStruct
	Consts []*enumConst // kindEnum: its values; kindStruct: its `type` discriminator values
}

type field struct {
	Name, JSON, Type, Doc string
	OmitEmpty             bool
}

type enumConst struct {
	Name, Value, Doc string
}

// leaf is one alternative of an object union after nested unions are
// flattened: its properties and which of them it requires.
type leaf struct {
	props    map[string]*Schema
	required map[string]bool
	doc      string
}

// generator turns the reachable part of a bundle into Go types.
type generator struct {
	b *Bundle
	// canon maps a top-level definition identical to the v2 one of the
	// same name onto the v2 one: they are one Go type.
	canon    map[defKey]defKey
	defNames map[defKey]string
	taken    map[string]string // Go identifier → what claimed it
	types    map[string]*goType
	defExpr  map[defKey]typeRef
	pending  []func() error
	// dry makes typeExpr name what it would produce without producing it,
	// so the alternatives of a union field can be compared first.
	dry bool
}

// typeRef is the Go type expression for a schema and whether it is a
// named struct (which becomes a pointer when optional).
type typeRef struct {
	Expr     string
	IsStruct bool
}

var rawRef = typeRef{Expr: "json.RawMessage"}

func newGenerator(b *Bundle) (*generator, error) {
	g := &generator{
		b: b, canon: map[defKey]defKey{}, defNames: map[defKey]string{},
		taken: map[string]string{}, types: map[string]*goType{}, defExpr: map[defKey]typeRef{},
	}
	// v2 is the current API: its definitions keep their names. A top-level
	// definition whose v2 namesake has the same shape is the same type; a
	// different one is named with a V1 suffix.
	for _, name := range sortedKeys(b.V2) {
		k := defKey{V2: true, Name: name}
		g.defNames[k] = g.claim(goName(name), k.String())
	}
	for _, name := range sortedKeys(b.Top) {
		k := defKey{Name: name}
		if other, ok := b.V2[name]; ok {
			if shape(other) == shape(b.Top[name]) {
				g.canon[k] = defKey{V2: true, Name: name}
				continue
			}
			g.defNames[k] = g.claim(goName(name)+"V1", k.String())
			continue
		}
		g.defNames[k] = g.claim(goName(name), k.String())
	}
	return g, nil
}

// claim reserves a Go identifier for owner; a taken one gets the first
// free numeric suffix (2, 3, ...). Claims happen in a fixed order, so the
// names are the same on every run.
func (g *generator) claim(name, owner string) string {
	try := name
	for i := 2; ; i++ {
		if _, ok := g.taken[try]; !ok {
			g.taken[try] = owner
			return try
		}
		try = name + strconv.Itoa(i)
	}
}

func (g *generator) key(ref string) (defKey, *Schema, error) {
	k, err := parseRef(ref)
	if err != nil {
		return defKey{}, nil, err
	}
	if c, ok := g.canon[k]; ok {
		k = c
	}
	s := g.b.lookup(k)
	if s == nil {
		return defKey{}, nil, fmt.Errorf("$ref %q: no such definition", ref)
	}
	return k, s, nil
}

// norm removes null from a schema: the `null` type, null alternatives of
// oneOf/anyOf, a null enum value; a single allOf is its member. It reports
// whether null was allowed.
func norm(s *Schema) (*Schema, bool) {
	if s == nil {
		return &Schema{Any: true}, false
	}
	nullable := false
	if len(s.AllOf) == 1 && s.Ref == "" && s.Properties == nil && len(s.OneOf) == 0 && len(s.AnyOf) == 0 && len(s.Type) == 0 {
		inner, n := norm(s.AllOf[0])
		c := *inner
		if c.Description == "" {
			c.Description = s.Description
		}
		return &c, n
	}
	c := *s
	if c.Type.has("null") {
		nullable = true
		var t typeList
		for _, n := range c.Type {
			if n != "null" {
				t = append(t, n)
			}
		}
		c.Type = t
	}
	if c.Enum != nil {
		var vals []any
		for _, v := range c.Enum {
			if v == nil {
				nullable = true
				continue
			}
			vals = append(vals, v)
		}
		c.Enum = vals
	}
	strip := func(alts []*Schema) []*Schema {
		var out []*Schema
		for _, a := range alts {
			if isNull(a) {
				nullable = true
				continue
			}
			out = append(out, a)
		}
		return out
	}
	c.OneOf, c.AnyOf = strip(c.OneOf), strip(c.AnyOf)
	if alts := append(append([]*Schema(nil), c.OneOf...), c.AnyOf...); len(alts) == 1 && c.Properties == nil && len(c.Type) == 0 && c.Ref == "" {
		inner, n := norm(alts[0])
		ic := *inner
		if ic.Description == "" {
			ic.Description = c.Description
		}
		return &ic, nullable || n
	}
	return &c, nullable
}

func isNull(s *Schema) bool {
	return s != nil && len(s.Type) == 1 && s.Type[0] == "null" && s.Ref == "" && s.Properties == nil
}

// alternatives of a (normalized) schema: its oneOf and anyOf members.
func alternatives(s *Schema) []*Schema {
	return append(append([]*Schema(nil), s.OneOf...), s.AnyOf...)
}

// resolve follows $refs (and normalizes) until a schema with content.
func (g *generator) resolve(s *Schema) (*Schema, error) {
	s, _ = norm(s)
	for i := 0; s.Ref != ""; i++ {
		if i > 50 {
			return nil, fmt.Errorf("$ref loop at %s", s.Ref)
		}
		_, t, err := g.key(s.Ref)
		if err != nil {
			return nil, err
		}
		s, _ = norm(t)
	}
	return s, nil
}

// classify says what named kind a (normalized, resolved) schema needs, or
// 0 when it is written inline (primitives, arrays, maps, any).
func (g *generator) classify(s *Schema) (kind, error) {
	if alts := alternatives(s); len(alts) > 0 {
		allObj, allStr := true, true
		for _, a := range alts {
			r, err := g.resolve(a)
			if err != nil {
				return 0, err
			}
			k, err := g.classify(r)
			if err != nil {
				return 0, err
			}
			if k != kindStruct {
				allObj = false
			}
			if !(k == kindEnum || (k == 0 && isPlainString(r))) {
				allStr = false
			}
		}
		if s.Properties != nil {
			// properties beside the alternatives: an object whose
			// alternatives add members.
			if allObj {
				return kindStruct, nil
			}
			return kindRaw, nil
		}
		switch {
		case allObj:
			return kindStruct, nil
		case allStr:
			return kindEnum, nil
		}
		return kindRaw, nil
	}
	if len(s.Enum) > 0 {
		for _, v := range s.Enum {
			if _, ok := v.(string); !ok {
				return kindRaw, nil
			}
		}
		return kindEnum, nil
	}
	if len(s.Type) > 1 {
		return kindRaw, nil
	}
	if s.Properties != nil {
		return kindStruct, nil
	}
	if s.Type.has("object") && s.AdditionalProperties == nil {
		return kindStruct, nil
	}
	return 0, nil
}

func isPlainString(s *Schema) bool {
	return len(s.Type) == 1 && s.Type[0] == "string" && s.Properties == nil && len(alternatives(s)) == 0
}

// typeExpr is the Go type for schema s; hint names an inline struct or
// enum it needs.
func (g *generator) typeExpr(s *Schema, hint string) (typeRef, error) {
	s, _ = norm(s)
	if s.Any {
		return rawRef, nil
	}
	if s.Ref != "" {
		k, _, err := g.key(s.Ref)
		if err != nil {
			return typeRef{}, err
		}
		return g.defType(k)
	}
	k, err := g.classify(s)
	if err != nil {
		return typeRef{}, err
	}
	switch k {
	case kindRaw:
		return rawRef, nil
	case kindStruct:
		return g.inline(hint, s, kindStruct)
	case kindEnum:
		if vals := enumValues(s); len(vals) == 1 && len(alternatives(s)) == 0 {
			return typeRef{Expr: "string"}, nil // a constant: a discriminator, or a lone tag
		}
		return g.inline(hint, s, kindEnum)
	}
	if len(s.Type) == 0 {
		return rawRef, nil
	}
	switch s.Type[0] {
	case "string":
		return typeRef{Expr: "string"}, nil
	case "integer":
		return typeRef{Expr: "int64"}, nil
	case "number":
		return typeRef{Expr: "float64"}, nil
	case "boolean":
		return typeRef{Expr: "bool"}, nil
	case "array":
		if s.Items == nil {
			return typeRef{Expr: "[]json.RawMessage"}, nil
		}
		item, err := g.typeExpr(s.Items, hint+"Item")
		if err != nil {
			return typeRef{}, err
		}
		return typeRef{Expr: "[]" + item.Expr}, nil
	case "object":
		a := s.AdditionalProperties
		if a == nil || a.Any || a.False {
			return typeRef{Expr: "map[string]json.RawMessage"}, nil
		}
		v, err := g.typeExpr(a, hint+"Value")
		if err != nil {
			return typeRef{}, err
		}
		return typeRef{Expr: "map[string]" + v.Expr}, nil
	}
	return rawRef, nil
}

// enumValues lists a string schema's values, from its enum or from its
// alternatives', in schema order without repeats.
func enumValues(s *Schema) []string {
	var out []string
	seen := map[string]bool{}
	for _, v := range s.Enum {
		if str, ok := v.(string); ok && !seen[str] {
			seen[str] = true
			out = append(out, str)
		}
	}
	return out
}

// defType is the Go type for a definition: a named type for structs,
// enums and raw mixes (built once, later), the inline expression for the
// rest.
func (g *generator) defType(k defKey) (typeRef, error) {
	if r, ok := g.defExpr[k]; ok {
		return r, nil
	}
	s, _ := norm(g.b.lookup(k))
	kd := kind(0)
	if s.Ref == "" && !s.Any {
		var err error
		if kd, err = g.classify(s); err != nil {
			return typeRef{}, fmt.Errorf("%s: %w", k, err)
		}
	}
	if kd == 0 {
		// Written inline; remembered so an inline type inside it is made once.
		r, err := g.typeExpr(s, g.defNames[k])
		if err == nil && !g.dry {
			g.defExpr[k] = r
		}
		return r, err
	}
	name := g.defNames[k]
	r := typeRef{Expr: name, IsStruct: kd == kindStruct}
	if g.dry {
		return r, nil
	}
	g.defExpr[k] = r
	t := &goType{Name: name, Doc: s.Description, Origin: k.String(), Kind: kd}
	g.types[name] = t
	g.pending = append(g.pending, func() error {
		if err := g.build(t, s); err != nil {
			return fmt.Errorf("%s: %w", k, err)
		}
		return nil
	})
	return r, nil
}

// inline names and builds a struct or enum that has no definition of its
// own; in a dry run it names the schema's shape instead.
func (g *generator) inline(hint string, s *Schema, kd kind) (typeRef, error) {
	if g.dry {
		return typeRef{Expr: "inline:" + shape(s), IsStruct: kd == kindStruct}, nil
	}
	name := g.claim(hint, "inline "+hint)
	t := &goType{Name: name, Doc: s.Description, Origin: "inline", Kind: kd}
	if kd == kindRaw {
		return rawRef, nil
	}
	g.types[name] = t
	if err := g.build(t, s); err != nil {
		return typeRef{}, fmt.Errorf("%s: %w", name, err)
	}
	return typeRef{Expr: name, IsStruct: kd == kindStruct}, nil
}

func (g *generator) build(t *goType, s *Schema) error {
	switch t.Kind {
	case kindEnum:
		return g.buildEnum(t, s)
	case kindStruct:
		return g.buildStruct(t, s)
	case kindRaw:
		return g.buildRawStrings(t, s)
	}
	return nil
}

// buildRawStrings gives a raw mix the string values its alternatives
// spell out (AskForApproval's "never"), as untyped constants: the client
// names them, so a value a new schema drops stops the build.
func (g *generator) buildRawStrings(t *goType, s *Schema) error {
	for _, a := range alternatives(s) {
		r, err := g.resolve(a)
		if err != nil {
			return err
		}
		if len(alternatives(r)) > 0 || !isPlainString(r) && len(r.Type) > 0 {
			continue
		}
		for _, v := range enumValues(r) {
			doc := ""
			if len(r.Enum) == 1 {
				doc = r.Description
			}
			t.Consts = append(t.Consts, &enumConst{Name: g.claim(t.Name+goName(v), t.Name+" value "+v), Value: v, Doc: doc})
		}
	}
	return nil
}

func (g *generator) buildEnum(t *goType, s *Schema) error {
	type val struct{ v, doc string }
	var vals []val
	seen := map[string]bool{}
	var collect func(s *Schema) error
	collect = func(s *Schema) error {
		r, err := g.resolve(s)
		if err != nil {
			return err
		}
		for _, a := range alternatives(r) {
			if err := collect(a); err != nil {
				return err
			}
		}
		for _, v := range enumValues(r) {
			if !seen[v] {
				seen[v] = true
				doc := ""
				if len(r.Enum) == 1 {
					doc = r.Description
				}
				vals = append(vals, val{v, doc})
			}
		}
		return nil
	}
	if err := collect(s); err != nil {
		return err
	}
	for _, v := range vals {
		t.Consts = append(t.Consts, &enumConst{Name: g.claim(t.Name+goName(v.v), t.Name+" value "+v.v), Value: v.v, Doc: v.doc})
	}
	return nil
}

// leaves flattens an object union: each alternative (recursively) with
// the properties of the schemas that enclose it.
func (g *generator) leaves(s *Schema) ([]leaf, error) {
	r, err := g.resolve(s)
	if err != nil {
		return nil, err
	}
	base := leaf{props: map[string]*Schema{}, required: map[string]bool{}, doc: r.Description}
	for n, p := range r.Properties {
		base.props[n] = p
	}
	for _, n := range r.Required {
		base.required[n] = true
	}
	alts := alternatives(r)
	if len(alts) == 0 {
		return []leaf{base}, nil
	}
	var out []leaf
	for _, a := range alts {
		ls, err := g.leaves(a)
		if err != nil {
			return nil, err
		}
		for _, l := range ls {
			m := leaf{props: map[string]*Schema{}, required: map[string]bool{}, doc: l.doc}
			for n, p := range base.props {
				m.props[n] = p
			}
			for n, p := range l.props {
				m.props[n] = p
			}
			for n := range base.required {
				m.required[n] = true
			}
			for n := range l.required {
				m.required[n] = true
			}
			out = append(out, m)
		}
	}
	return out, nil
}

func (g *generator) buildStruct(t *goType, s *Schema) error {
	ls, err := g.leaves(s)
	if err != nil {
		return err
	}
	tags, err := g.tags(ls)
	if err != nil {
		return err
	}
	names := map[string]bool{}
	for _, l := range ls {
		for n := range l.props {
			names[n] = true
		}
	}
	fieldNames := map[string]bool{}
	for _, jsonName := range sortedKeys(names) {
		f := &field{JSON: jsonName, Name: goName(jsonName)}
		for fieldNames[f.Name] {
			f.Name += "_"
		}
		fieldNames[f.Name] = true
		hint := t.Name + f.Name
		var first *Schema
		required, nullable, same := true, false, true
		dryExpr := ""
		var docs []leafDoc
		for i, l := range ls {
			p, ok := l.props[jsonName]
			if !ok {
				required = false
				continue
			}
			if !l.required[jsonName] {
				required = false
			}
			ns, n := norm(p)
			nullable = nullable || n
			tag := ""
			if tags != nil {
				tag = tags[i]
			}
			docs = append(docs, leafDoc{tag: tag, doc: strings.TrimSpace(ns.Description)})
			g.dry = true
			r, err := g.typeExpr(p, hint)
			g.dry = false
			if err != nil {
				return fmt.Errorf("field %s: %w", jsonName, err)
			}
			if first == nil {
				first, dryExpr = p, r.Expr
			} else if r.Expr != dryExpr {
				same = false
			}
		}
		ref := rawRef
		if same {
			if ref, err = g.typeExpr(first, hint); err != nil {
				return fmt.Errorf("field %s: %w", jsonName, err)
			}
		}
		f.Doc = fieldDoc(docs)
		f.OmitEmpty = !required || nullable
		f.Type = ref.Expr
		if ref.IsStruct && f.OmitEmpty {
			f.Type = "*" + f.Type
		}
		t.Fields = append(t.Fields, f)
	}
	seen := map[string]bool{}
	for i, v := range tags {
		if seen[v] {
			continue
		}
		seen[v] = true
		t.Consts = append(t.Consts, &enumConst{
			Name: g.claim(t.Name+"Type"+goName(v), t.Name+" type "+v), Value: v, Doc: ls[i].doc,
		})
	}
	return nil
}

// tags are the values of the leaves' `type` discriminator, one per leaf,
// or nil when some leaf has no single string value for it.
func (g *generator) tags(ls []leaf) ([]string, error) {
	var out []string
	for _, l := range ls {
		p, ok := l.props["type"]
		if !ok {
			return nil, nil
		}
		r, err := g.resolve(p)
		if err != nil {
			return nil, err
		}
		if len(r.Enum) != 1 || len(alternatives(r)) > 0 {
			return nil, nil
		}
		v, ok := r.Enum[0].(string)
		if !ok {
			return nil, nil
		}
		out = append(out, v)
	}
	return out, nil
}

// leafDoc is a field's description in one leaf of a union.
type leafDoc struct{ tag, doc string }

// fieldDoc is a merged field's doc comment: the description when every
// leaf that has the field says the same, else each leaf's description
// under its `type` value, so a description of one alternative is not read
// as true of all.
func fieldDoc(docs []leafDoc) string {
	if len(docs) == 0 {
		return ""
	}
	same := true
	for _, d := range docs[1:] {
		if d.doc != docs[0].doc {
			same = false
		}
	}
	if same {
		return docs[0].doc
	}
	var lines []string
	seen := map[leafDoc]bool{}
	for _, d := range docs {
		if d.doc == "" || seen[d] {
			continue
		}
		seen[d] = true
		if d.tag != "" {
			lines = append(lines, "For type "+d.tag+": "+d.doc)
		} else {
			lines = append(lines, d.doc)
		}
	}
	return strings.Join(lines, "\n\n")
}

// drain builds every queued definition (which may queue more).
func (g *generator) drain() error {
	for len(g.pending) > 0 {
		next := g.pending[0]
		g.pending = g.pending[1:]
		if err := next(); err != nil {
			return err
		}
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// docLines makes a doc comment of text, each line prefixed.
func docLines(b *strings.Builder, indent, text string) {
	text = strings.TrimSpace(text)
	if text == "" {
		return
	}
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimRight(line, " \t\r")
		if line == "" {
			b.WriteString(indent + "//\n")
			continue
		}
		b.WriteString(indent + "// " + line + "\n")
	}
}
