package wire

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func specText(t *testing.T) string {
	t.Helper()
	var buf bytes.Buffer
	if err := WriteSpec(&buf); err != nil {
		t.Fatalf("WriteSpec: %v", err)
	}
	return buf.String()
}

// specSchemaDoc is the decoded output of WriteJSONSchema.
type specSchemaDoc struct {
	Schema string                    `json:"$schema"`
	OneOf  []map[string]string       `json:"oneOf"`
	Defs   map[string]specSchemaNode `json:"$defs"`
}

// specSchemaNode is the part of a JSON Schema the tests look at.
type specSchemaNode struct {
	Type                 json.RawMessage           `json:"type"`
	Const                json.RawMessage           `json:"const"`
	Enum                 []any                     `json:"enum"`
	Properties           map[string]specSchemaNode `json:"properties"`
	Required             []string                  `json:"required"`
	AdditionalProperties *bool                     `json:"additionalProperties"`
	Items                *specSchemaNode           `json:"items"`
	MinItems             *int                      `json:"minItems"`
	MinLength            *int                      `json:"minLength"`
	Minimum              *int                      `json:"minimum"`
	OneOf                []map[string]string       `json:"oneOf"`
	Description          string                    `json:"description"`
}

func specSchemaBytes(t *testing.T) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := WriteJSONSchema(&buf); err != nil {
		t.Fatalf("WriteJSONSchema: %v", err)
	}
	return buf.Bytes()
}

func specDecodeSchema(t *testing.T) specSchemaDoc {
	t.Helper()
	raw := specSchemaBytes(t)
	if !json.Valid(raw) {
		t.Fatalf("WriteJSONSchema output is not JSON:\n%s", raw)
	}
	var doc specSchemaDoc
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("decode schema: %v", err)
	}
	return doc
}

func specAllDefs() []*Def {
	var out []*Def
	out = append(out, Commands...)
	out = append(out, Events...)
	return append(out, Lines...)
}

// specWant is a string the spec must contain and what it stands for.
type specWant struct{ what, name string }

func TestWriteSpecNamesEverything(t *testing.T) {
	spec := specText(t)
	var wants []specWant
	for _, d := range specAllDefs() {
		wants = append(wants, specWant{"definition heading", "\n  " + d.Name + "\n"})
		if d.Doc != "" {
			// The doc is wrapped, so look for its first word run.
			wants = append(wants, specWant{d.Name + " doc", specFirstWords(d.Doc, 3)})
		}
		var walk func(prefix string, fs []Field)
		walk = func(prefix string, fs []Field) {
			for _, f := range fs {
				wants = append(wants, specWant{prefix + " field", f.Name})
				wants = append(wants, specWant{prefix + " field header", f.Name + " ("})
				wants = append(wants, specEnumWants(prefix+"."+f.Name, f.Enum)...)
				if f.Items != nil {
					wants = append(wants, specEnumWants(prefix+"."+f.Name+"[]", f.Items.Enum)...)
				}
				walk(prefix+"."+f.Name, specElementFields(&f))
			}
		}
		walk(d.Name, d.Fields)
	}
	for _, r := range StopReasons {
		wants = append(wants, specWant{"stop_reason", "\n  " + r.Name + "\n"})
	}
	wants = append(wants, []specWant{
		{"protocol", Proto},
		{"8 MiB limit", "8 MiB"},
		{"exit code 2", "2 if --continue"},
		{"session_id on events", "session_id (string, required, non-empty)"},
		{"optional env", "env (array of string, optional"},
		{"nullable cached_tokens", "cached_tokens (integer or null, required"},
		{"hello const", `proto (string, required, always "openmax-stdio/6")`},
	}...)
	flat := strings.Join(strings.Fields(spec), " ") // undo the wrapping
	for _, w := range wants {
		if !strings.Contains(spec, w.name) && !strings.Contains(flat, w.name) {
			t.Errorf("spec lacks %s %q", w.what, w.name)
		}
	}
	for i, line := range strings.Split(spec, "\n") {
		if len(line) > specWidth && strings.Contains(strings.TrimSpace(line), " ") {
			t.Errorf("spec line %d is %d columns: %q", i+1, len(line), line)
		}
	}
}

func specEnumWants(where string, enum []string) []specWant {
	if len(enum) == 0 {
		return nil
	}
	return []specWant{{where + " enum", "one of " + strings.Join(enum, ", ")}}
}

func specFirstWords(s string, n int) string {
	w := strings.Fields(s)
	if len(w) > n {
		w = w[:n]
	}
	return strings.Join(w, " ")
}

func TestWriteSpecSectionsInOrder(t *testing.T) {
	spec := specText(t)
	at := -1
	for _, h := range []string{"FRAMING", "HANDSHAKE", "KEY ORDER", "COMMANDS", "EVENTS", "OTHER STDOUT LINES", "STOP REASONS", "TURN GUARANTEES"} {
		i := strings.Index(spec, "\n"+h)
		if i < 0 {
			t.Fatalf("spec lacks section %s", h)
		}
		if i < at {
			t.Errorf("section %s out of order", h)
		}
		at = i
	}
}

func TestJSONSchemaHasEveryDef(t *testing.T) {
	doc := specDecodeSchema(t)
	if doc.Schema != "https://json-schema.org/draft/2020-12/schema" {
		t.Errorf("$schema = %q", doc.Schema)
	}
	if got := specRefs(doc.OneOf); !reflect.DeepEqual(got, []string{"#/$defs/stdin", "#/$defs/stdout"}) {
		t.Errorf("top-level oneOf = %v", got)
	}
	var stdin, stdout []string
	for _, d := range Commands {
		stdin = append(stdin, "#/$defs/"+schemaDefKey(d))
	}
	for _, d := range append(append([]*Def(nil), Events...), Lines...) {
		stdout = append(stdout, "#/$defs/"+schemaDefKey(d))
	}
	if got := specRefs(doc.Defs["stdin"].OneOf); !reflect.DeepEqual(got, stdin) {
		t.Errorf("stdin oneOf = %v, want %v", got, stdin)
	}
	if got := specRefs(doc.Defs["stdout"].OneOf); !reflect.DeepEqual(got, stdout) {
		t.Errorf("stdout oneOf = %v, want %v", got, stdout)
	}

	for _, d := range specAllDefs() {
		t.Run(schemaDefKey(d), func(t *testing.T) {
			s, ok := doc.Defs[schemaDefKey(d)]
			if !ok {
				t.Fatalf("no $defs entry %q", schemaDefKey(d))
			}
			var want []string
			var disc string
			switch d.Role {
			case RoleCommand:
				want, disc = []string{"cmd"}, "cmd"
			case RoleEvent:
				want, disc = []string{"session_id", "type"}, "type"
			default:
				want, disc = []string{"type"}, "type"
			}
			for _, f := range d.Fields {
				if !f.Optional {
					want = append(want, f.Name)
				}
			}
			if !reflect.DeepEqual(s.Required, want) {
				t.Errorf("required = %v, want %v", s.Required, want)
			}
			if string(s.Properties[disc].Const) != `"`+d.Name+`"` {
				t.Errorf("%s const = %s, want %q", disc, s.Properties[disc].Const, d.Name)
			}
			for _, f := range d.Fields {
				p, ok := s.Properties[f.Name]
				if !ok {
					t.Errorf("no property %q", f.Name)
					continue
				}
				if f.Doc != "" && p.Description != f.Doc {
					t.Errorf("%s description = %q, want the field doc", f.Name, p.Description)
				}
			}
			// Properties are the required names plus the optional fields.
			if len(s.Properties) != len(want)+specCountOptional(d.Fields) {
				t.Errorf("%d properties, want the envelope plus %d fields", len(s.Properties), len(d.Fields))
			}
			closed := s.AdditionalProperties != nil && !*s.AdditionalProperties
			if closed != (d.Role != RoleCommand) {
				t.Errorf("additionalProperties false = %v, want %v", closed, d.Role != RoleCommand)
			}
			if string(s.Type) != `"object"` {
				t.Errorf("type = %s, want \"object\"", s.Type)
			}
			if s.Description != d.Doc {
				t.Errorf("description = %q, want the def doc", s.Description)
			}
		})
	}
}

func specCountOptional(fs []Field) int {
	n := 0
	for _, f := range fs {
		if f.Optional {
			n++
		}
	}
	return n
}

func specRefs(list []map[string]string) []string {
	var out []string
	for _, m := range list {
		out = append(out, m["$ref"])
	}
	return out
}

func TestJSONSchemaFacts(t *testing.T) {
	doc := specDecodeSchema(t)
	prop := func(def, name string) specSchemaNode {
		t.Helper()
		s, ok := doc.Defs[def]
		if !ok {
			t.Fatalf("no $defs entry %q", def)
		}
		p, ok := s.Properties[name]
		if !ok {
			t.Fatalf("%s has no property %q", def, name)
		}
		return p
	}
	required := func(def, name string) bool {
		for _, r := range doc.Defs[def].Required {
			if r == name {
				return true
			}
		}
		return false
	}
	tests := []struct {
		name  string
		check func() (got, want any)
	}{
		{"cached_tokens allows null", func() (any, any) {
			var types []string
			if err := json.Unmarshal(prop("event.usage", "cached_tokens").Type, &types); err != nil {
				return err.Error(), nil
			}
			return types, []string{"integer", "null"}
		}},
		{"cached_tokens is still required", func() (any, any) {
			return required("event.usage", "cached_tokens"), true
		}},
		{"integers have minimum 0", func() (any, any) {
			m := prop("event.budget", "used_tokens").Minimum
			return m != nil && *m == 0, true
		}},
		{"approval_request.env is not required", func() (any, any) {
			return required("event.approval_request", "env"), false
		}},
		{"approval_request.env is a non-empty string array", func() (any, any) {
			p := prop("event.approval_request", "env")
			return []any{string(p.Type), p.MinItems != nil && *p.MinItems == 1, p.Items != nil && string(p.Items.Type) == `"string"`},
				[]any{`"array"`, true, true}
		}},
		{"required arrays have no minItems", func() (any, any) {
			return prop("event.refrozen", "tools").MinItems == nil, true
		}},
		{"hello.protocol_version const is 6", func() (any, any) {
			return string(prop("line.hello", "protocol_version").Const), "6"
		}},
		{"hello.proto const", func() (any, any) {
			return string(prop("line.hello", "proto").Const), `"` + Proto + `"`
		}},
		{"approval_settled.outcome enum", func() (any, any) {
			return prop("event.approval_settled", "outcome").Enum, []any{"approved", "declined", "timed_out", "cancelled"}
		}},
		{"approval_mode command enum", func() (any, any) {
			return prop("command.approval_mode", "mode").Enum, []any{"auto", "ask", "readonly"}
		}},
		{"non-empty strings have minLength 1", func() (any, any) {
			m := prop("event.done", "stop_reason").MinLength
			return m != nil && *m == 1, true
		}},
		{"tool_start.args is an object", func() (any, any) {
			return string(prop("event.tool_start", "args").Type), `"object"`
		}},
		{"transcript messages are closed objects", func() (any, any) {
			it := prop("line.transcript", "messages").Items
			if it == nil {
				return "no items", "items"
			}
			closed := it.AdditionalProperties != nil && !*it.AdditionalProperties
			return []any{string(it.Type), it.Required, it.Properties["role"].Enum, closed},
				[]any{`"object"`, []string{"role", "content"}, []any{"user", "assistant"}, true}
		}},
		{"protocol_error has no session_id", func() (any, any) {
			_, has := doc.Defs["line.protocol_error"].Properties["session_id"]
			return has, false
		}},
		{"approval_mode ack has no session_id", func() (any, any) {
			_, has := doc.Defs["line.approval_mode"].Properties["session_id"]
			return has, false
		}},
		{"transcript requires session_id", func() (any, any) {
			return required("line.transcript", "session_id"), true
		}},
		{"events require a non-empty session_id", func() (any, any) {
			m := prop("event.token", "session_id").MinLength
			return []any{required("event.token", "session_id"), m != nil && *m == 1}, []any{true, true}
		}},
		{"commands allow extra members", func() (any, any) {
			return doc.Defs["command.user"].AdditionalProperties == nil, true
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, want := tt.check()
			if !reflect.DeepEqual(got, want) {
				t.Errorf("got %#v, want %#v", got, want)
			}
		})
	}
}

func TestSpecOutputIsDeterministic(t *testing.T) {
	tests := []struct {
		name  string
		write func(*bytes.Buffer) error
	}{
		{"WriteSpec", func(b *bytes.Buffer) error { return WriteSpec(b) }},
		{"WriteJSONSchema", func(b *bytes.Buffer) error { return WriteJSONSchema(b) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var a, b bytes.Buffer
			if err := tt.write(&a); err != nil {
				t.Fatal(err)
			}
			if err := tt.write(&b); err != nil {
				t.Fatal(err)
			}
			if a.Len() == 0 {
				t.Fatal("empty output")
			}
			if !bytes.Equal(a.Bytes(), b.Bytes()) {
				t.Error("two calls produced different output")
			}
		})
	}
}

func TestJSONSchemaFormatting(t *testing.T) {
	raw := specSchemaBytes(t)
	var compact bytes.Buffer
	if err := json.Compact(&compact, raw); err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	if err := json.Indent(&want, compact.Bytes(), "", "  "); err != nil {
		t.Fatal(err)
	}
	want.WriteByte('\n')
	if !bytes.Equal(raw, want.Bytes()) {
		t.Error("schema is not indented by two spaces")
	}
	if !bytes.HasPrefix(raw, []byte("{\n  \"$schema\": ")) {
		t.Errorf("schema does not open with $schema: %.40q", raw)
	}
}

// TestSpecCarriesTheNormativeRules: the paragraphs of the contract that no
// definition carries are in --spec stdio too: session ownership, the
// approval-mode rules, unapproved_source and --approve, credential grants,
// hooks and -p's exit 4.
func TestSpecCarriesTheNormativeRules(t *testing.T) {
	text := strings.Join(strings.Fields(specText(t)), " ")
	for _, want := range []string{
		"no other process holds open for writing", "keeps it for as long as it runs",
		"canonical path", "refused with a protocol_error in a project that is not trusted", "OPENMAX_AGENT_SPAWNED",
		"acknowledged only once it is saved", "In auto no approval_request is ever written", "deny rules",
		"stays open until it is answered or cancelled", "after quit or end of input",
		"reason unapproved_source", "source_sha", "must never approve one of these by itself", "openmax --approve SOURCE_PATH",
		"approval_request.env", "left out when the list is empty",
		"done blocked", "saved to disk before turn_refused", "done unverified", "hook_failed",
		"openmax -p, which has no done to read, exits 4",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("--spec stdio lacks %q", want)
		}
	}
}
