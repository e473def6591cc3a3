package main

import (
	"bytes"
	"context"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// TestGeneratedFileIsCurrent regenerates from the committed schema and
// compares with the committed protocol.gen.go byte for byte: a change to
// the generator that alters its output fails here until the file is
// regenerated.
func TestGeneratedFileIsCurrent(t *testing.T) {
	bundle, err := os.ReadFile(filepath.Join("..", "..", "schema", bundleFile))
	if err != nil {
		t.Fatal(err)
	}
	version, err := os.ReadFile(filepath.Join("..", "..", "schema", versionFile))
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join("..", "..", "protocol.gen.go"))
	if err != nil {
		t.Fatal(err)
	}
	got, st, err := Generate(bundle, strings.TrimSpace(string(version)), clientMethods)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("provider/codex/protocol.gen.go is not what the generator makes from provider/codex/schema: "+
			"run `go generate ./provider/codex` (or offline: cd provider/codex && go run ./internal/gen -schema schema) "+
			"and commit the result\nfirst difference: %s", firstDiff(want, got))
	}
	if st.Structs == 0 || st.Enums == 0 || st.Raws == 0 || st.Methods == 0 {
		t.Errorf("stats %+v: every kind should occur in the real schema", st)
	}
	again, _, err := Generate(bundle, strings.TrimSpace(string(version)), clientMethods)
	if err != nil || !bytes.Equal(again, got) {
		t.Errorf("a second run made different output (err %v)", err)
	}
}

// firstDiff describes the first line where committed and generated differ.
func firstDiff(committed, generated []byte) string {
	a, b := strings.Split(string(committed), "\n"), strings.Split(string(generated), "\n")
	for i := 0; i < len(a) || i < len(b); i++ {
		var x, y string
		if i < len(a) {
			x = a[i]
		}
		if i < len(b) {
			y = b[i]
		}
		if x != y {
			return "line " + strconv.Itoa(i+1) + ": committed " + quote(x) + ", generated " + quote(y)
		}
	}
	return "none by line"
}

func quote(s string) string { return "«" + s + "»" }

// TestRules generates from small hand-written schemas in testdata and
// checks the conversion rules on the declarations made.
func TestRules(t *testing.T) {
	tests := []struct {
		name, file string
		methods    []string
		want       map[string]string // declaration key (see decls) → rendering
		absent     []string          // declaration keys that must not exist
	}{
		{
			name: "object union merged", file: "union.json", methods: []string{"thing/get"},
			want: map[string]string{
				"type Item":                         "struct",
				"doc Item":                          "One item of a thing.",
				"Item.Type":                         "string `json:\"type\"`",
				"Item.ID":                           "string `json:\"id\"`",
				"doc Item.ID":                       "The item's id.",
				"Item.Value":                        "json.RawMessage `json:\"value\"`",
				"doc Item.Value":                    "For type beta-gamma: How much.",
				"Item.Count":                        "int64 `json:\"count,omitempty\"`",
				"Item.Extra":                        "*ItemExtra `json:\"extra,omitempty\"`",
				"type ItemExtra":                    "struct",
				"ItemExtra.X":                       "float64 `json:\"x\"`",
				"const ItemTypeAlpha":               `"alpha"`,
				"doc const ItemTypeAlpha":           "An alpha item.",
				"const ItemTypeBetaGamma":           `"beta-gamma"`,
				"ThingGetParams.ThingID":            "string `json:\"thingId\"`",
				"const MethodThingGet":              `"thing/get"`,
				"const SchemaVersion":               `"1.2.3"`,
				"map clientResults[MethodThingGet]": "ThingGetResponse",
			},
			absent: []string{"type Unused", "type RequestID", "type AlphaItem", "type AlphaItemType"},
		},
		{
			name: "string enums", file: "enum.json", methods: []string{"mode/set"},
			want: map[string]string{
				"type SandboxMode":                       "string",
				"const SandboxModeReadOnly":              `SandboxMode "read-only"`,
				"const SandboxModeDangerFullAccess":      `SandboxMode "danger-full-access"`,
				"type Level":                             "string",
				"const LevelLow":                         `Level "low"`,
				"doc const LevelLow":                     "Low effort.",
				"const LevelHigh":                        `Level "high"`,
				"ModeSetParams.Mode":                     "SandboxMode `json:\"mode\"`",
				"ModeSetParams.Level":                    "Level `json:\"level\"`",
				"ModeSetParams.InlineKind":               "ModeSetParamsInlineKind `json:\"inlineKind,omitempty\"`",
				"const ModeSetParamsInlineKindSecondOne": `ModeSetParamsInlineKind "second_one"`,
				"type ModeSetResponse":                   "struct",
				"map clientResults[MethodModeSet]":       "ModeSetResponse",
			},
		},
		{
			name: "string/object and string/integer mixes are raw", file: "mix.json", methods: []string{"policy/set"},
			want: map[string]string{
				"type AskForApproval":           "= json.RawMessage",
				"type RequestID":                "= json.RawMessage",
				"PolicySetParams.Policy":        "AskForApproval `json:\"policy\"`",
				"PolicySetParams.ID":            "RequestID `json:\"id,omitempty\"`",
				"PolicySetParams.Either":        "json.RawMessage `json:\"either,omitempty\"`",
				"const AskForApprovalNever":     `"never"`,
				"const AskForApprovalUntrusted": `"untrusted"`,
			},
			absent: []string{"type GranularAskForApproval", "type AskForApprovalGranular"},
		},
		{
			name: "optional, nullable, scalars, arrays, maps", file: "optional.json", methods: []string{"opt/run"},
			want: map[string]string{
				"OptRunParams.Required":         "Child `json:\"required\"`",
				"OptRunParams.Optional":         "*Child `json:\"optional,omitempty\"`",
				"OptRunParams.NullableRequired": "*Child `json:\"nullableRequired,omitempty\"`",
				"OptRunParams.Described":        "*Child `json:\"described,omitempty\"`",
				"doc OptRunParams.Described":    "A child by allOf.",
				"OptRunParams.Count":            "int64 `json:\"count\"`",
				"OptRunParams.Ratio":            "float64 `json:\"ratio,omitempty\"`",
				"OptRunParams.Name":             "string `json:\"name\"`",
				"OptRunParams.NullableName":     "string `json:\"nullableName,omitempty\"`",
				"OptRunParams.Tags":             "[]string `json:\"tags\"`",
				"OptRunParams.Children":         "[]Child `json:\"children,omitempty\"`",
				"OptRunParams.Labels":           "map[string]string `json:\"labels,omitempty\"`",
				"OptRunParams.Config":           "map[string]json.RawMessage `json:\"config,omitempty\"`",
				"OptRunParams.Anything":         "json.RawMessage `json:\"anything,omitempty\"`",
				"Child.N":                       "int64 `json:\"n\"`",
				"type OptRunResponse":           "struct",
			},
		},
		{
			name: "refs across top level and v2, messages and maps", file: "refs.json", methods: []string{"initialize"},
			want: map[string]string{
				"type Shared":                                    "struct",
				"doc Shared":                                     "New words.",
				"InitializeParams.Shared":                        "Shared `json:\"shared\"`",
				"ThingChangedNotification.Shared":                "*Shared `json:\"shared,omitempty\"`",
				"InitializeParams.Clash":                         "ClashV1 `json:\"clash\"`",
				"InitializeParams.NewClash":                      "Clash `json:\"newClash\"`",
				"ClashV1.Old":                                    "string `json:\"old,omitempty\"`",
				"Clash.New":                                      "string `json:\"new,omitempty\"`",
				"DynamicToolCallParams.Arguments":                "json.RawMessage `json:\"arguments,omitempty\"`",
				"const MethodInitialize":                         `"initialize"`,
				"const MethodInitialized":                        `"initialized"`,
				"const MethodThingChanged":                       `"thing/changed"`,
				"const MethodItemToolCall":                       `"item/tool/call"`,
				"map clientResults[MethodInitialize]":            "InitializeResponse",
				"map notificationParams[MethodThingChanged]":     "ThingChangedNotification",
				"map serverRequestParams[MethodItemToolCall]":    "DynamicToolCallParams",
				"map serverRequestResponses[MethodItemToolCall]": "DynamicToolCallResponse",
			},
			absent: []string{"type SharedV1"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bundle, err := os.ReadFile(filepath.Join("testdata", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			src, _, err := Generate(bundle, "1.2.3", tt.methods)
			if err != nil {
				t.Fatal(err)
			}
			typecheck(t, src)
			got := decls(t, src)
			for k, want := range tt.want {
				if g, ok := got[k]; !ok {
					t.Errorf("%s: missing", k)
				} else if g != want {
					t.Errorf("%s = %s, want %s", k, g, want)
				}
			}
			for _, k := range tt.absent {
				if g, ok := got[k]; ok {
					t.Errorf("%s = %s, want no such declaration", k, g)
				}
			}
			if t.Failed() {
				t.Logf("generated:\n%s", src)
			}
		})
	}
}

// TestErrors: what the generator refuses, and that it says why.
func TestErrors(t *testing.T) {
	request := func(params string) string {
		return `{"definitions": {"ClientRequest": {"oneOf": [{"type": "object", "properties": {
			"method": {"enum": ["x/run"], "type": "string"}, "params": ` + params + `}}]}, "v2": {
			"XRunParams": {"type": "object", "properties": {"a": {"$ref": "#/definitions/v2/A"}}},
			"OtherParams": {"type": "object"},
			"BadRefParams": {"type": "object", "properties": {"a": {"$ref": "#/components/A"}}},
			"BadRefResponse": {"type": "object"},
			"A": {"type": "string"}}}}`
	}
	tests := []struct {
		name, bundle string
		methods      []string
		want         string
	}{
		{"unknown client method", request(`{"$ref": "#/definitions/v2/XRunParams"}`), []string{"x/other"}, `ClientRequest has no method "x/other"`},
		{"no result type", request(`{"$ref": "#/definitions/v2/XRunParams"}`), []string{"x/run"}, "no result type #/definitions/v2/XRunResponse"},
		{"params not named Params", request(`{"$ref": "#/definitions/v2/A"}`), []string{"x/run"}, "does not end in Params"},
		{"unsupported ref", request(`{"$ref": "#/definitions/v2/BadRefParams"}`), []string{"x/run"}, `unsupported $ref "#/components/A"`},
		{"missing definition", request(`{"$ref": "#/definitions/v2/Nope"}`), []string{"x/run"}, "no such definition"},
		{"not JSON", `{`, nil, "parse schema bundle"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := Generate([]byte(tt.bundle), "1", tt.methods)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestGoName(t *testing.T) {
	tests := map[string]string{
		"threadId":                "ThreadID",
		"ThreadId":                "ThreadID",
		"text_elements":           "TextElements",
		"item/agentMessage/delta": "ItemAgentMessageDelta",
		"danger-full-access":      "DangerFullAccess",
		"receiverThreadIds":       "ReceiverThreadIDs",
		"imageUrl":                "ImageURL",
		"experimentalApi":         "ExperimentalAPI",
		"Identity":                "Identity",
		"AVAILABLE":               "AVAILABLE",
		"2fa":                     "V2fa",
		"":                        "Empty",
		"error":                   "Error",
	}
	for in, want := range tests {
		if got := goName(in); got != want {
			t.Errorf("goName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestParseVersion(t *testing.T) {
	if v, err := parseVersion("codex-cli 0.169.0\n"); err != nil || v != "0.169.0" {
		t.Errorf("parseVersion = %q, %v", v, err)
	}
	for _, bad := range []string{"", "codex-cli\n", "codex-cli dev"} {
		if v, err := parseVersion(bad); err == nil {
			t.Errorf("parseVersion(%q) = %q, want an error", bad, v)
		}
	}
}

// sourceImporter type-checks the standard library from source once for
// every typecheck of the test binary (a new one per call parsed
// encoding/json and its imports again each time: most of this package's
// test time).
var (
	importFset     = token.NewFileSet()
	sourceImporter = importer.ForCompiler(importFset, "source", nil)
	importMu       sync.Mutex
)

// typecheck compiles a generated file as package codex.
func typecheck(t *testing.T, src []byte) {
	t.Helper()
	importMu.Lock() // the source importer is not safe for concurrent use
	defer importMu.Unlock()
	fset := importFset
	f, err := parser.ParseFile(fset, "protocol.gen.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	conf := types.Config{Importer: sourceImporter}
	if _, err := conf.Check("codex", fset, []*ast.File{f}, nil); err != nil {
		t.Fatalf("generated code does not compile: %v\n%s", err, src)
	}
}

// decls indexes a generated file's declarations by key:
//
//	"type T"         → "struct", "string" or "= json.RawMessage"
//	"T.Field"        → the field's type and tag
//	"const C"        → [type] value
//	"doc X"          → the doc comment of type, field (T.F) or const (const C)
//	"map m[Method]"  → the type the map's constructor returns
func decls(t *testing.T, src []byte) map[string]string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "protocol.gen.go", src, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	doc := func(key string, cg *ast.CommentGroup) {
		if cg != nil {
			out["doc "+key] = strings.TrimSpace(cg.Text())
		}
	}
	for _, d := range f.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok {
			continue
		}
		for _, spec := range gd.Specs {
			switch s := spec.(type) {
			case *ast.TypeSpec:
				name := s.Name.Name
				if len(gd.Specs) == 1 {
					doc(name, gd.Doc)
				}
				switch ty := s.Type.(type) {
				case *ast.StructType:
					out["type "+name] = "struct"
					for _, fl := range ty.Fields.List {
						for _, n := range fl.Names {
							out[name+"."+n.Name] = types.ExprString(fl.Type) + " " + fl.Tag.Value
							doc(name+"."+n.Name, fl.Doc)
						}
					}
				default:
					r := types.ExprString(s.Type)
					if s.Assign.IsValid() {
						r = "= " + r
					}
					out["type "+name] = r
				}
			case *ast.ValueSpec:
				for i, n := range s.Names {
					if gd.Tok == token.CONST {
						v := types.ExprString(s.Values[i])
						if s.Type != nil {
							v = types.ExprString(s.Type) + " " + v
						}
						out["const "+n.Name] = v
						doc("const "+n.Name, s.Doc)
						continue
					}
					lit, ok := s.Values[i].(*ast.CompositeLit)
					if !ok {
						continue
					}
					for _, e := range lit.Elts {
						kv := e.(*ast.KeyValueExpr)
						ret := kv.Value.(*ast.FuncLit).Body.List[0].(*ast.ReturnStmt).Results[0].(*ast.CallExpr)
						out["map "+n.Name+"["+types.ExprString(kv.Key)+"]"] = types.ExprString(ret.Args[0])
					}
				}
			}
		}
	}
	return out
}

// fakeCodex writes a shell script standing in for the codex CLI: it
// prints version for --version and, asked for the experimental schema,
// writes bundle where it is told (exiting 2 on any other arguments).
func fakeCodex(t *testing.T, version, bundle string) string {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("the stand-in codex is a shell script")
	}
	dir := t.TempDir()
	script := `#!/bin/sh
case "$1" in
--version) echo "` + version + `" ;;
app-server)
	[ "$2" = generate-json-schema ] && [ "$3" = --experimental ] && [ "$4" = --out ] || { echo "bad args: $*" >&2; exit 2; }
	[ -n "$CODEX_HOME" ] && [ "$CODEX_HOME" != "$HOME/.codex" ] || { echo "no CODEX_HOME of its own" >&2; exit 3; }
	mkdir -p "$5" && cp '` + bundle + `' "$5/` + bundleFile + `" ;;
*) echo "unexpected $*" >&2; exit 2 ;;
esac
`
	p := filepath.Join(dir, "codex")
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestRun drives the command as go generate does, with a stand-in codex:
// the bundle and VERSION are kept and the Go file written from them; and
// offline from a kept schema.
func TestRun(t *testing.T) {
	ctx := context.Background()
	real := clientMethods
	t.Cleanup(func() { clientMethods = real })
	clientMethods = []string{"initialize"} // what testdata/refs.json has
	bundle, err := filepath.Abs(filepath.Join("testdata", "refs.json"))
	if err != nil {
		t.Fatal(err)
	}
	keep, out := t.TempDir(), filepath.Join(t.TempDir(), "protocol.gen.go")
	codex := fakeCodex(t, "codex-cli 9.8.7", bundle)
	if err := run(ctx, []string{"-codex", codex, "-schemadir", keep, "-out", out}); err != nil {
		t.Fatal(err)
	}
	if v, _ := os.ReadFile(filepath.Join(keep, versionFile)); string(v) != "9.8.7\n" {
		t.Errorf("VERSION = %q, want 9.8.7", v)
	}
	want, _ := os.ReadFile(bundle)
	if got, _ := os.ReadFile(filepath.Join(keep, bundleFile)); !bytes.Equal(got, want) {
		t.Errorf("the kept bundle is not what codex wrote")
	}
	src, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if got := decls(t, src)["const SchemaVersion"]; got != `"9.8.7"` {
		t.Errorf("SchemaVersion = %s, want \"9.8.7\"", got)
	}

	// $CODEX names the CLI when -codex is not given.
	t.Setenv("CODEX", codex)
	out2 := filepath.Join(t.TempDir(), "protocol.gen.go")
	if err := run(ctx, []string{"-schemadir", t.TempDir(), "-out", out2}); err != nil {
		t.Fatal(err)
	}
	// Offline from the kept schema: the same file.
	out3 := filepath.Join(t.TempDir(), "protocol.gen.go")
	if err := run(ctx, []string{"-schema", keep, "-out", out3}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{out2, out3} {
		if got, _ := os.ReadFile(p); !bytes.Equal(got, src) {
			t.Errorf("%s differs from the first run's output", p)
		}
	}
}

func TestRunFailures(t *testing.T) {
	ctx := context.Background()
	bundle, err := filepath.Abs(filepath.Join("testdata", "refs.json"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args func(t *testing.T) []string
		want string
	}{
		{"no version number", func(t *testing.T) []string {
			return []string{"-codex", fakeCodex(t, "codex-cli dev", bundle), "-schemadir", t.TempDir(), "-out", filepath.Join(t.TempDir(), "x.go")}
		}, `no version number`},
		{"codex fails", func(t *testing.T) []string {
			return []string{"-codex", fakeCodex(t, "codex-cli 1.0.0", "/nonexistent/bundle.json"), "-schemadir", t.TempDir(), "-out", filepath.Join(t.TempDir(), "x.go")}
		}, "generate-json-schema --experimental"},
		{"no codex", func(t *testing.T) []string {
			return []string{"-codex", filepath.Join(t.TempDir(), "missing"), "-schemadir", t.TempDir(), "-out", filepath.Join(t.TempDir(), "x.go")}
		}, "--version"},
		{"no kept schema", func(t *testing.T) []string {
			return []string{"-schema", t.TempDir(), "-out", filepath.Join(t.TempDir(), "x.go")}
		}, bundleFile},
		{"stray argument", func(t *testing.T) []string { return []string{"-schema", t.TempDir(), "extra"} }, "unexpected arguments"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := run(ctx, tt.args(t))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want one containing %q", err, tt.want)
			}
		})
	}
}
