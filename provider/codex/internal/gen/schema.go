package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// Schema is the part of JSON Schema (draft-07) that codex app-server's
// bundle uses. A schema that is the literal true (any value) has Any set.
type Schema struct {
	Ref                  string             `json:"$ref,omitempty"`
	Type                 typeList           `json:"type,omitempty"`
	Title                string             `json:"title,omitempty"`
	Description          string             `json:"description,omitempty"`
	Enum                 []any              `json:"enum,omitempty"`
	Format               string             `json:"format,omitempty"`
	Properties           map[string]*Schema `json:"properties,omitempty"`
	Required             []string           `json:"required,omitempty"`
	AdditionalProperties *Schema            `json:"additionalProperties,omitempty"`
	Items                *Schema            `json:"items,omitempty"`
	OneOf                []*Schema          `json:"oneOf,omitempty"`
	AnyOf                []*Schema          `json:"anyOf,omitempty"`
	AllOf                []*Schema          `json:"allOf,omitempty"`

	// Any is set for the schema `true`; False for the schema `false`.
	Any, False bool `json:"-"`
}

// UnmarshalJSON accepts the boolean schemas true and false besides objects.
func (s *Schema) UnmarshalJSON(b []byte) error {
	switch string(bytes.TrimSpace(b)) {
	case "true":
		*s = Schema{Any: true}
		return nil
	case "false":
		*s = Schema{False: true}
		return nil
	}
	type plain Schema
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*s = Schema(p)
	return nil
}

// MarshalJSON writes the boolean schemas back as booleans (used to compare
// schemas by their canonical text).
func (s *Schema) MarshalJSON() ([]byte, error) {
	if s.Any {
		return []byte("true"), nil
	}
	if s.False {
		return []byte("false"), nil
	}
	type plain Schema
	return json.Marshal((*plain)(s))
}

// typeList is the `type` keyword: one name or a list of names.
type typeList []string

func (t *typeList) UnmarshalJSON(b []byte) error {
	var one string
	if err := json.Unmarshal(b, &one); err == nil {
		*t = typeList{one}
		return nil
	}
	var many []string
	if err := json.Unmarshal(b, &many); err != nil {
		return fmt.Errorf("type: %w", err)
	}
	*t = many
	return nil
}

func (t typeList) has(name string) bool {
	for _, n := range t {
		if n == name {
			return true
		}
	}
	return false
}

// Bundle is codex_app_server_protocol.schemas.json: the top-level
// definitions and the nested v2 set.
type Bundle struct {
	Top map[string]*Schema
	V2  map[string]*Schema
}

// ParseBundle reads the bundle's definitions, the nested `v2` set apart.
func ParseBundle(data []byte) (*Bundle, error) {
	var raw struct {
		Definitions map[string]json.RawMessage `json:"definitions"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("parse schema bundle: %w", err)
	}
	b := &Bundle{Top: map[string]*Schema{}, V2: map[string]*Schema{}}
	for name, msg := range raw.Definitions {
		if name == "v2" {
			if err := json.Unmarshal(msg, &b.V2); err != nil {
				return nil, fmt.Errorf("parse schema bundle: definitions.v2: %w", err)
			}
			continue
		}
		var s Schema
		if err := json.Unmarshal(msg, &s); err != nil {
			return nil, fmt.Errorf("parse schema bundle: definition %s: %w", name, err)
		}
		b.Top[name] = &s
	}
	return b, nil
}

// defKey names one definition: in the v2 set or at the top level.
type defKey struct {
	V2   bool
	Name string
}

func (k defKey) String() string {
	if k.V2 {
		return "#/definitions/v2/" + k.Name
	}
	return "#/definitions/" + k.Name
}

// parseRef turns "#/definitions/X" or "#/definitions/v2/X" into a key.
func parseRef(ref string) (defKey, error) {
	if rest, ok := strings.CutPrefix(ref, "#/definitions/v2/"); ok && !strings.Contains(rest, "/") {
		return defKey{V2: true, Name: rest}, nil
	}
	if rest, ok := strings.CutPrefix(ref, "#/definitions/"); ok && !strings.Contains(rest, "/") {
		return defKey{Name: rest}, nil
	}
	return defKey{}, fmt.Errorf("unsupported $ref %q", ref)
}

func (b *Bundle) lookup(k defKey) *Schema {
	if k.V2 {
		return b.V2[k.Name]
	}
	return b.Top[k.Name]
}

// shape is a schema's canonical text without the keywords that do not
// change the Go type (descriptions, titles, defaults are dropped by the
// Schema type already; $schema too), so two definitions can be compared.
func shape(s *Schema) string {
	c := *s
	c.Title, c.Description = "", ""
	b, err := json.Marshal(stripDocs(&c))
	if err != nil {
		panic(err) // a parsed schema always marshals
	}
	return string(b)
}

// stripDocs copies s without titles and descriptions at any depth.
func stripDocs(s *Schema) *Schema {
	if s == nil {
		return nil
	}
	c := *s
	c.Title, c.Description = "", ""
	if s.Properties != nil {
		c.Properties = map[string]*Schema{}
		for k, v := range s.Properties {
			c.Properties[k] = stripDocs(v)
		}
	}
	c.AdditionalProperties = stripDocs(s.AdditionalProperties)
	c.Items = stripDocs(s.Items)
	c.OneOf, c.AnyOf, c.AllOf = stripAll(s.OneOf), stripAll(s.AnyOf), stripAll(s.AllOf)
	if len(c.Required) > 0 {
		c.Required = append([]string(nil), c.Required...)
		sort.Strings(c.Required)
	}
	return &c
}

func stripAll(l []*Schema) []*Schema {
	if l == nil {
		return nil
	}
	out := make([]*Schema, len(l))
	for i, s := range l {
		out[i] = stripDocs(s)
	}
	return out
}
