package main

import (
	"fmt"
	"go/format"
	"sort"
	"strconv"
	"strings"
)

// Stats counts what one run generated.
type Stats struct {
	Structs, Enums, Raws, Methods int
}

// method is one JSON-RPC method of the protocol.
type method struct {
	Name, Const, Dir string
	Params, Result   *typeRef // nil when not generated
}

// union lists the alternatives of one of the protocol's message unions
// (ClientRequest, ServerNotification, ...) as method name → params schema.
func union(b *Bundle, name string) (map[string]*Schema, error) {
	out := map[string]*Schema{}
	u := b.Top[name]
	if u == nil {
		return out, nil // a schema without such messages
	}
	for i, a := range alternatives(u) {
		m := a.Properties["method"]
		if m == nil || len(m.Enum) != 1 {
			return nil, fmt.Errorf("%s alternative %d has no single method", name, i)
		}
		s, ok := m.Enum[0].(string)
		if !ok {
			return nil, fmt.Errorf("%s alternative %d: method is not a string", name, i)
		}
		out[s] = a.Properties["params"]
	}
	return out, nil
}

// Generate writes the Go source for a schema bundle made by the codex CLI
// of the given version: the types of the given client methods' params and
// results, of every server notification and request, of the client
// notifications, and of everything they reference.
func Generate(bundleJSON []byte, version string, clientMethods []string) ([]byte, Stats, error) {
	var st Stats
	b, err := ParseBundle(bundleJSON)
	if err != nil {
		return nil, st, err
	}
	g, err := newGenerator(b)
	if err != nil {
		return nil, st, err
	}
	dirs := []struct{ union, dir string }{
		{"ClientRequest", "a client request"},
		{"ClientNotification", "a client notification"},
		{"ServerRequest", "a server request"},
		{"ServerNotification", "a server notification"},
	}
	unions := map[string]map[string]*Schema{}
	methods := map[string]*method{}
	for _, d := range dirs {
		u, err := union(b, d.union)
		if err != nil {
			return nil, st, err
		}
		unions[d.union] = u
		for _, name := range sortedKeys(u) {
			if m, ok := methods[name]; ok {
				m.Dir += ", " + d.dir
				continue
			}
			methods[name] = &method{Name: name, Dir: d.dir}
		}
	}
	for _, name := range sortedKeys(methods) {
		methods[name].Const = g.claim("Method"+goName(name), "method "+name)
	}

	// paramsAndResult generates a method's params type and, by the naming
	// convention XParams → XResponse, its result type.
	paramsAndResult := func(u, name string, wantResult bool) (*typeRef, *typeRef, error) {
		p, ok := unions[u][name]
		if !ok {
			return nil, nil, fmt.Errorf("%s has no method %q", u, name)
		}
		if p == nil {
			if wantResult {
				return nil, nil, fmt.Errorf("%s %q has no params: cannot name its result", u, name)
			}
			return nil, nil, nil
		}
		ns, _ := norm(p)
		if ns.Ref == "" {
			return nil, nil, fmt.Errorf("%s %q: params are not a definition", u, name)
		}
		pr, err := g.typeExpr(p, "")
		if err != nil {
			return nil, nil, fmt.Errorf("%s %q params: %w", u, name, err)
		}
		if !wantResult {
			return &pr, nil, nil
		}
		k, _, err := g.key(ns.Ref)
		if err != nil {
			return nil, nil, err
		}
		base, ok := strings.CutSuffix(k.Name, "Params")
		if !ok {
			return nil, nil, fmt.Errorf("%s %q: params type %s does not end in Params", u, name, k.Name)
		}
		rk := defKey{V2: k.V2, Name: base + "Response"}
		if b.lookup(rk) == nil {
			return nil, nil, fmt.Errorf("%s %q: no result type %s", u, name, rk)
		}
		rr, err := g.typeExpr(&Schema{Ref: rk.String()}, "")
		if err != nil {
			return nil, nil, fmt.Errorf("%s %q result: %w", u, name, err)
		}
		return &pr, &rr, nil
	}

	sortedClient := append([]string(nil), clientMethods...)
	sort.Strings(sortedClient)
	clientRes := map[string]*typeRef{}
	for _, name := range sortedClient {
		_, r, err := paramsAndResult("ClientRequest", name, true)
		if err != nil {
			return nil, st, err
		}
		clientRes[name] = r
	}
	notes := map[string]*typeRef{}
	for _, name := range sortedKeys(unions["ClientNotification"]) {
		if _, _, err := paramsAndResult("ClientNotification", name, false); err != nil {
			return nil, st, err
		}
	}
	for _, name := range sortedKeys(unions["ServerNotification"]) {
		p, _, err := paramsAndResult("ServerNotification", name, false)
		if err != nil {
			return nil, st, err
		}
		notes[name] = p
	}
	reqParams, reqResults := map[string]*typeRef{}, map[string]*typeRef{}
	for _, name := range sortedKeys(unions["ServerRequest"]) {
		p, r, err := paramsAndResult("ServerRequest", name, true)
		if err != nil {
			return nil, st, err
		}
		reqParams[name], reqResults[name] = p, r
	}
	if err := g.drain(); err != nil {
		return nil, st, err
	}

	var o strings.Builder
	o.WriteString("// SchemaVersion is the version of the codex CLI whose app-server schema\n// these types were generated from.\n")
	fmt.Fprintf(&o, "const SchemaVersion = %s\n\n", strconv.Quote(version))

	o.WriteString("// The methods of the protocol.\nconst (\n")
	for _, name := range sortedKeys(methods) {
		m := methods[name]
		fmt.Fprintf(&o, "\t// %s is %s.\n\t%s = %s\n", m.Const, m.Dir, m.Const, strconv.Quote(name))
	}
	o.WriteString(")\n\n")
	st.Methods = len(methods)

	writeMap := func(doc, name string, entries map[string]*typeRef) {
		o.WriteString(doc)
		fmt.Fprintf(&o, "var %s = map[string]func() any{\n", name)
		for _, m := range sortedKeys(entries) {
			r := entries[m]
			if r == nil {
				continue
			}
			fmt.Fprintf(&o, "\t%s: func() any { return new(%s) },\n", methods[m].Const, r.Expr)
		}
		o.WriteString("}\n\n")
	}
	writeMap("// clientResults makes, for each client request the package sends, a new\n// value to decode its result into.\n", "clientResults", clientRes)
	writeMap("// notificationParams makes, for each server notification, a new value to\n// decode its params into.\n", "notificationParams", notes)
	writeMap("// serverRequestParams makes, for each server request, a new value to\n// decode its params into.\n", "serverRequestParams", reqParams)
	writeMap("// serverRequestResponses makes, for each server request, a new value of\n// the result the client answers with.\n", "serverRequestResponses", reqResults)

	for _, name := range sortedKeys(g.types) {
		t := g.types[name]
		doc := t.Doc
		if strings.TrimSpace(doc) == "" {
			if t.Origin == "inline" {
				doc = t.Name + " is written inline in the schema, with no definition of its own."
			} else {
				doc = t.Name + " is the schema's " + t.Origin + "."
			}
		}
		docLines(&o, "", doc)
		switch t.Kind {
		case kindRaw:
			st.Raws++
			fmt.Fprintf(&o, "type %s = json.RawMessage\n\n", t.Name)
			if len(t.Consts) > 0 {
				fmt.Fprintf(&o, "// The string values of %s (its other alternatives are not strings):\n// a value of type %s holds one JSON-encoded.\nconst (\n", t.Name, t.Name)
				for _, c := range t.Consts {
					docLines(&o, "\t", c.Doc)
					fmt.Fprintf(&o, "\t%s = %s\n", c.Name, strconv.Quote(c.Value))
				}
				o.WriteString(")\n\n")
			}
		case kindEnum:
			st.Enums++
			fmt.Fprintf(&o, "type %s string\n\n", t.Name)
			if len(t.Consts) > 0 {
				fmt.Fprintf(&o, "// The values of %s.\nconst (\n", t.Name)
				for _, c := range t.Consts {
					docLines(&o, "\t", c.Doc)
					fmt.Fprintf(&o, "\t%s %s = %s\n", c.Name, t.Name, strconv.Quote(c.Value))
				}
				o.WriteString(")\n\n")
			}
		case kindStruct:
			st.Structs++
			fmt.Fprintf(&o, "type %s struct {\n", t.Name)
			for i, f := range t.Fields {
				if i > 0 && f.Doc != "" {
					o.WriteString("\n")
				}
				docLines(&o, "\t", f.Doc)
				tag := f.JSON
				if f.OmitEmpty {
					tag += ",omitempty"
				}
				fmt.Fprintf(&o, "\t%s %s `json:%s`\n", f.Name, f.Type, strconv.Quote(tag))
			}
			o.WriteString("}\n\n")
			if len(t.Consts) > 0 {
				fmt.Fprintf(&o, "// The values of %s's type member.\nconst (\n", t.Name)
				for _, c := range t.Consts {
					docLines(&o, "\t", c.Doc)
					fmt.Fprintf(&o, "\t%s = %s\n", c.Name, strconv.Quote(c.Value))
				}
				o.WriteString(")\n\n")
			}
		}
	}
	head := "// Code generated by provider/codex/internal/gen from schema/" + bundleFile + " (codex-cli " + version + "); DO NOT EDIT.\n\npackage codex\n\n"
	if strings.Contains(o.String(), "json.RawMessage") {
		head += "import \"encoding/json\"\n\n"
	}
	src, err := format.Source([]byte(head + o.String()))
	if err != nil {
		return nil, st, fmt.Errorf("format generated code: %w", err)
	}
	return src, st, nil
}
