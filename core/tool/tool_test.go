package tool

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/openmax/openmax/provider"
)

func named(n string) Tool {
	return Func{ToolSpec: provider.ToolSpec{Name: n}, Fn: func(context.Context, json.RawMessage) Result { return Result{OK: true, Output: n} }}
}

func TestRegistryKeepsOrderAndRejectsClashes(t *testing.T) {
	r, err := NewRegistry(named("b"), named("a"))
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Names(); !reflect.DeepEqual(got, []string{"b", "a"}) {
		t.Errorf("names %v", got)
	}
	if specs := r.Specs(); len(specs) != 2 || specs[0].Name != "b" {
		t.Errorf("specs %+v", specs)
	}
	if tl, ok := r.Lookup("a"); !ok || tl.Run(context.Background(), nil).Output != "a" {
		t.Error("lookup a")
	}
	if _, ok := r.Lookup("c"); ok {
		t.Error("found an unregistered tool")
	}
	if err := r.Register(named("a")); err == nil {
		t.Error("a second tool named a was accepted")
	}
	if err := r.Register(named("")); err == nil {
		t.Error("a nameless tool was accepted")
	}
	var nilReg *Registry
	if _, ok := nilReg.Lookup("a"); ok || nilReg.Specs() != nil || nilReg.Names() != nil {
		t.Error("a nil registry is not empty")
	}
	if f := Failed("bad %d", 7); f.OK || f.Output != "bad 7" {
		t.Errorf("Failed: %+v", f)
	}
}

func TestResultRedacted(t *testing.T) {
	secrets := []string{"sk-secret-123456"}
	res := Result{OK: true, Output: "a sk-secret-123456 b", Diffs: []FileDiff{{Path: "sk-secret-123456.txt", Unified: "+sk-secret-123456\n", Added: 1}}}
	cases := []struct {
		name    string
		secrets []string
		out     string
		unified string
	}{
		{"no secrets", nil, res.Output, res.Diffs[0].Unified},
		{"a secret", secrets, "a [redacted] b", "+[redacted]\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := res.Redacted(c.secrets)
			if got.Output != c.out || got.Diffs[0].Unified != c.unified || !got.OK || got.Diffs[0].Added != 1 {
				t.Errorf("Redacted = %+v", got)
			}
		})
	}
	if res.Diffs[0].Unified != "+sk-secret-123456\n" {
		t.Error("Redacted changed the result it was given")
	}
}

// TestRegistryCompactsSchemas: a spec's schema is kept as the wires send
// it, without the JSON's layout; what is not JSON, or empty, is kept as
// it is.
func TestRegistryCompactsSchemas(t *testing.T) {
	for _, tt := range []struct{ name, schema, want string }{
		{"indented", "{\n  \"type\": \"object\",\n  \"properties\": {\"a\": {\"type\": \"string\", \"description\": \"x < y & z\"}}\n}\n", `{"type":"object","properties":{"a":{"type":"string","description":"x < y & z"}}}`},
		{"compact", `{"type":"object"}`, `{"type":"object"}`},
		{"empty", "", ""},
		{"not JSON", "{type: object", "{type: object"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r, err := NewRegistry(Func{ToolSpec: provider.ToolSpec{Name: "t", Description: "d", Schema: json.RawMessage(tt.schema)}})
			if err != nil {
				t.Fatal(err)
			}
			if got := r.Specs()[0]; string(got.Schema) != tt.want || got.Name != "t" || got.Description != "d" {
				t.Errorf("spec %q %q %s, want schema %s", got.Name, got.Description, got.Schema, tt.want)
			}
		})
	}
}
