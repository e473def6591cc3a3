package importer_test

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/openmax/openmax/internal/fixture"
	"github.com/openmax/openmax/recorder/cassette"
	"github.com/openmax/openmax/recorder/importer"
)

// TestLoad: an openmax cassette loads as it is; every real recording is
// converted as `cassette import` converts it (session included when one
// can be made up) and named by its format; what is neither is refused
// with the path in the error.
func TestLoad(t *testing.T) {
	native := filepath.Join(fixture.Root(), "cassettes", "openai_plain.yaml")
	f, converted, err := importer.Load(native)
	if err != nil || converted != "" || f.Session == nil || f.Session.Imported {
		t.Fatalf("Load(%s) = session %+v, %q, %v; want the recorded session, not converted", native, f.Session, converted, err)
	}
	want, err := cassette.Load(native)
	if err != nil {
		t.Fatal(err)
	}
	if a, _ := f.Marshal(); string(a) != string(mustMarshal(t, want)) {
		t.Errorf("Load and cassette.Load read %s differently", native)
	}

	all := append([]struct{ id, file, format, vendor string }{}, fixtures...)
	for k, name := range responsesFixtures {
		all = append(all, struct{ id, file, format, vendor string }{"", name, responsesFormats[k], ""})
	}
	for _, fx := range all {
		t.Run(fx.file, func(t *testing.T) {
			path := fixture.Real(t, fx.file)
			f, converted, err := importer.Load(path)
			if err != nil || converted != fx.format {
				t.Fatalf("Load = %q, %v; want converted from %s", converted, err, fx.format)
			}
			imported, err := importer.Import(fx.format, fixture.ReadReal(t, fx.file))
			if err != nil {
				t.Fatal(err)
			}
			s, serr := importer.Session(imported)
			imported.Session = s
			if string(mustMarshal(t, f)) != string(mustMarshal(t, imported)) {
				t.Errorf("Load's cassette is not what cassette import writes")
			}
			note := importer.Note(path, converted, f)
			if !strings.HasPrefix(note, path+": a "+fx.format+" recording, converted in memory") || strings.Contains(note, "\n") {
				t.Errorf("note %q", note)
			}
			if serr != nil && !strings.Contains(note, "no session made up: "+serr.Error()) {
				t.Errorf("note %q does not say why no session was made up (%v)", note, serr)
			}
		})
	}

	dir := t.TempDir()
	for _, tt := range []struct {
		name, data string
		want       []string
		unknown    bool
	}{
		{"torn.yaml", "version: 1\ninteractions:\n- request: {method: GET, url: 'http://h/'}\n  response: {code: 200, body: ab}\n  openmax: {chunks: [{data: a}]}\n", []string{"torn.yaml", "do not add up"}, false},
		{"prose.txt", "just some text\n", []string{"prose.txt", "neither an openmax cassette nor a recording"}, true},
		{"bad-body.yaml", vcrpyDoc("", "parsed_body: {x: .inf}\n"), []string{"bad-body.yaml", "interaction 0: response parsed_body"}, false},
	} {
		p := filepath.Join(dir, tt.name)
		if err := os.WriteFile(p, []byte(tt.data), 0o644); err != nil {
			t.Fatal(err)
		}
		_, _, err := importer.Load(p)
		if err == nil {
			t.Errorf("%s: loaded", tt.name)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q lacks %q", tt.name, err, w)
			}
		}
		if errors.Is(err, importer.ErrUnknownFormat) != tt.unknown {
			t.Errorf("%s: errors.Is(ErrUnknownFormat) = %v", tt.name, !tt.unknown)
		}
	}
	if _, _, err := importer.Load(filepath.Join(dir, "missing.yaml")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a missing file: %v", err)
	}
}

func mustMarshal(t *testing.T, f *cassette.File) []byte {
	t.Helper()
	b, err := f.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestSessionResponses: a Responses recording gets a session for the
// harness's Responses client (provider openai, api responses), with the
// user text read from its input and the tool results from the
// function_call_output items that end each later request's input.
func TestSessionResponses(t *testing.T) {
	it := func(body string, code int) *cassette.Interaction {
		var in cassette.Interaction
		in.Request.Method, in.Request.URL, in.Request.Body = "POST", "https://api.openai.com/v1/responses", body
		in.Response.Code = code
		return &in
	}
	tests := []struct {
		name     string
		its      []*cassette.Interaction
		wantText string
		results  []cassette.ToolResult
		wantErr  string
	}{
		{"string input", []*cassette.Interaction{it(`{"model":"m","input":"hello"}`, 400)}, "hello", nil, ""},
		{"message list", []*cassette.Interaction{it(`{"model":"m","input":[{"role":"system","content":"sys"},{"role":"user","content":"first"},{"type":"function_call_output","call_id":"c","output":"5"},{"role":"user","content":[{"type":"input_text","text":"second"}]}]}`, 429), it(`{}`, 400)}, "second", nil, ""},
		{"a reply", []*cassette.Interaction{it(`{"model":"m","input":"hi"}`, 429), it(`{}`, 200)}, "hi", nil, ""},
		{"a tool loop", []*cassette.Interaction{
			it(`{"model":"m","input":[{"role":"user","content":"go"}],"tools":[{"type":"function","name":"add","parameters":{"type":"object"}},{"type":"function","name":"ls","parameters":{}}]}`, 200),
			it(`{"model":"m","input":[{"role":"user","content":"go"},{"type":"function_call","call_id":"c1","name":"add","arguments":"{}"},{"type":"function_call","call_id":"c2","name":"ls","arguments":"{}"},{"type":"function_call_output","call_id":"c1","output":"5"},{"type":"function_call_output","call_id":"c2","output":[{"type":"input_text","text":"a.txt"}]}]}`, 200),
			it(`{"model":"m","input":[{"role":"user","content":"go"},{"type":"function_call","call_id":"c1","name":"add","arguments":"{}"},{"type":"function_call_output","call_id":"c1","output":"5"},{"role":"assistant","content":"done"},{"role":"user","content":"again"}]}`, 200),
		}, "go", []cassette.ToolResult{{Name: "add", OK: true, Output: "5"}, {Name: "ls", OK: true, Output: "a.txt"}}, ""},
		{"no user text", []*cassette.Interaction{it(`{"model":"m","input":[]}`, 200)}, "", nil, "no user text"},
		{"input not readable", []*cassette.Interaction{it(`{"model":"m","input":7}`, 200)}, "", nil, "input"},
		// A rejected request needs no text the model would read.
		{"no user text, rejected", []*cassette.Interaction{it(`{"model":"m","input":[]}`, 400)}, "(the rejected request has no user message)", nil, ""},
		{"input not readable, rejected", []*cassette.Interaction{it(`{"model":"m","input":7}`, 400)}, "(the rejected request has no user message)", nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := importer.Session(&cassette.File{Version: 1, Interactions: tt.its})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one with %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !s.Imported || len(s.Commands) != 1 || !strings.Contains(s.Commands[0].Line, `"text":"`+tt.wantText+`"`) || s.Config == nil ||
				s.Config.Provider != "openai" || s.Config.API != "responses" || s.Config.Model != "m" || s.Config.MaxIterations != len(tt.its) {
				t.Errorf("session %+v, config %+v", s, s.Config)
			}
			if !reflect.DeepEqual(s.ToolResults, tt.results) {
				t.Errorf("tool results %+v, want %+v", s.ToolResults, tt.results)
			}
		})
	}
}

// TestSessionWire: the provider of an imported session is the wire its
// first request's path speaks (the vendor packages' IsPath), whatever the
// host, root and query.
func TestSessionWire(t *testing.T) {
	tests := []struct {
		url      string
		provider string // "" when the session cannot be made
	}{
		{"https://api.openai.com/v1/chat/completions", "openai"},
		{"https://openrouter.ai/api/v1/chat/completions?x=1", "openai"},
		{"https://api.anthropic.com/v1/messages", "anthropic"},
		{"http://127.0.0.1:8080/proxy/v1/messages?beta=true", "anthropic"},
		{"https://api.openai.com/v1/chat/completions?next=/v1/messages", "openai"},
		{"https://api.openai.com/v1/embeddings", ""},
		{"https://api.anthropic.com/v1/messages/count_tokens", ""},
		{"https://api.openai.com/v1/responses?x=1", "openai"},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			var in cassette.Interaction
			in.Request.Method, in.Request.URL = "POST", tt.url
			in.Request.Body = `{"model":"m","messages":[{"role":"user","content":"hi"}],"input":"hi"}`
			in.Response.Code = 200
			s, err := importer.Session(&cassette.File{Version: 1, Interactions: []*cassette.Interaction{&in}})
			if tt.provider == "" {
				if err == nil || !strings.Contains(err.Error(), "wire") || !strings.Contains(err.Error(), "anthropic") {
					t.Fatalf("session %+v, error %v: want an error naming the wires", s, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s.Config == nil || s.Config.Provider != tt.provider {
				t.Errorf("config %+v, want provider %s", s.Config, tt.provider)
			}
		})
	}
}
