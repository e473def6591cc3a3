package appserver

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// transcriptOf builds a transcript from (dir, msg) pairs.
func transcriptOf(t *testing.T, lines ...string) *Transcript {
	t.Helper()
	var b strings.Builder
	for i := 0; i < len(lines); i += 2 {
		b.WriteString(`{"dir":"` + lines[i] + `","msg":` + lines[i+1] + "}\n")
	}
	tr, err := Parse(strings.NewReader(b.String()), 0)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// TestMatchRules: each rule of the normalisation table, and what it does
// not forgive.
func TestMatchRules(t *testing.T) {
	tests := []struct {
		name     string
		recorded []string // dir, msg, ...
		client   []string
		want     []string // the lines written; nil for none
		match    bool
	}{{
		name:     "request ids are the client's",
		recorded: []string{"send", `{"id":1,"method":"a"}`, "recv", `{"id":1,"result":{"id":1}}`, "recv", `{"method":"n","params":{"id":1}}`},
		client:   []string{`{"id":"x1","method":"a"}`},
		want:     []string{`{"id":"x1","result":{"id":1}}`, `{"method":"n","params":{"id":1}}`},
		match:    true,
	}, {
		name:     "an error response carries the client's id wherever the id is",
		recorded: []string{"send", `{"id":5,"method":"a"}`, "recv", `{"error":{"code":-32600,"message":"no"},"id":5}`},
		client:   []string{`{"id":77,"method":"a"}`},
		want:     []string{`{"error":{"code":-32600,"message":"no"},"id":77}`},
		match:    true,
	}, {
		name:     "a request is not a notification",
		recorded: []string{"send", `{"id":1,"method":"a"}`},
		client:   []string{`{"method":"a"}`},
	}, {
		name:     "a response answers the recorded server request",
		recorded: []string{"recv", `{"id":0,"method":"item/tool/call"}`, "send", `{"id":0,"result":{}}`},
		client:   []string{`{"id":"0","result":{}}`},
		want:     []string{`{"id":0,"method":"item/tool/call"}`},
	}, {
		name:     "numbers compare by value, not spelling",
		recorded: []string{"send", `{"id":1,"method":"a","params":{"temperature":1,"limit":100,"p":0.5}}`, "recv", `{"id":1,"result":{}}`},
		client:   []string{`{"id":1,"method":"a","params":{"temperature":1.0,"limit":1e2,"p":5E-1}}`},
		want:     []string{`{"id":1,"result":{}}`},
		match:    true,
	}, {
		name:     "numbers that differ in value differ, however long",
		recorded: []string{"send", `{"method":"a","params":{"n":12345678901234567890}}`},
		client:   []string{`{"method":"a","params":{"n":12345678901234567891}}`},
	}, {
		name:     "timestamps",
		recorded: []string{"send", `{"method":"a","params":{"emittedAtMs":1,"item":{"startedAt":5,"durationMs":3}}}`},
		client:   []string{`{"method":"a","params":{"emittedAtMs":2,"item":{"startedAt":6,"durationMs":4}}}`},
		match:    true,
	}, {
		name:     "a timestamp key holding a string is compared",
		recorded: []string{"send", `{"method":"a","params":{"startedAt":"monday"}}`},
		client:   []string{`{"method":"a","params":{"startedAt":"tuesday"}}`},
	}, {
		name:     "emails were redacted",
		recorded: []string{"send", `{"method":"a","params":{"account":{"email":"[redacted]"}}}`},
		client:   []string{`{"method":"a","params":{"account":{"email":"someone@example.com"}}}`},
		match:    true,
	}, {
		name:     "the client's version",
		recorded: []string{"send", `{"id":1,"method":"initialize","params":{"clientInfo":{"name":"openmax","version":"0.1.0"}}}`},
		client:   []string{`{"id":1,"method":"initialize","params":{"clientInfo":{"name":"openmax","version":"0.2.0"}}}`},
		match:    true,
	}, {
		name:     "the client's name",
		recorded: []string{"send", `{"id":1,"method":"initialize","params":{"clientInfo":{"name":"openmax","version":"0.1.0"}}}`},
		client:   []string{`{"id":1,"method":"initialize","params":{"clientInfo":{"name":"other","version":"0.1.0"}}}`},
	}, {
		name:     "a version in another method",
		recorded: []string{"send", `{"id":1,"method":"x","params":{"clientInfo":{"version":"0.1.0"}}}`},
		client:   []string{`{"id":1,"method":"x","params":{"clientInfo":{"version":"0.2.0"}}}`},
	}, {
		name:     "a member more",
		recorded: []string{"send", `{"method":"a","params":{}}`},
		client:   []string{`{"method":"a","params":{},"jsonrpc":"2.0"}`},
	}, {
		name:     "a cwd learned applies at once, to later lines and to what is written",
		recorded: []string{"send", `{"id":1,"method":"a","params":{"cwd":"/r/w","file":"/r/w/x"}}`, "recv", `{"id":1,"result":{"roots":["/r/w","/r/w/sub","/r/wx","/r"],"/r/w":"/r/w"}}`, "send", `{"method":"b","params":{"path":"/r/w/y"}}`, "recv", `{"method":"c","params":{"text":"see /r/w"}}`},
		client:   []string{`{"id":1,"method":"a","params":{"cwd":"/c/0","file":"/c/0/x"}}`, `{"method":"b","params":{"path":"/c/0/y"}}`},
		want:     []string{`{"id":1,"result":{"roots":["/c/0","/c/0/sub","/r/wx","/r"],"/r/w":"/c/0"}}`, `{"method":"c","params":{"text":"see /c/0"}}`},
		match:    true,
	}, {
		name:     "a learned cwd inside text, at path boundaries only",
		recorded: []string{"send", `{"method":"a","params":{"cwd":"/r/w"}}`, "recv", `{"method":"c","params":{"output":"cd /r/w && ls /r/w/x\n/r/w.\n(/r/w) /r/wx /x/r/w /r/w.bak /r/w-2 '/r/w'"}}`, "send", `{"id":0,"result":{"text":"wrote /r/w/a.txt"}}`},
		client:   []string{`{"method":"a","params":{"cwd":"/c/0"}}`, `{"id":0,"result":{"text":"wrote /c/0/a.txt"}}`},
		want:     []string{`{"method":"c","params":{"output":"cd /c/0 && ls /c/0/x\n/c/0.\n(/c/0) /r/wx /x/r/w /r/w.bak /r/w-2 '/c/0'"}}`},
		match:    true,
	}, {
		name:     "a learned cwd stops at a path boundary",
		recorded: []string{"send", `{"method":"a","params":{"cwd":"/r/w","file":"/r/wx"}}`},
		client:   []string{`{"method":"a","params":{"cwd":"/c/0","file":"/c/0x"}}`},
	}, {
		name:     "a relative cwd is not learned",
		recorded: []string{"send", `{"method":"a","params":{"cwd":"work"}}`},
		client:   []string{`{"method":"a","params":{"cwd":"other"}}`},
	}, {
		name:     "the root is not learned",
		recorded: []string{"send", `{"method":"a","params":{"cwd":"/"}}`},
		client:   []string{`{"method":"a","params":{"cwd":"/c"}}`},
	}, {
		name:     "a learned cwd must then be kept",
		recorded: []string{"send", `{"method":"a","params":{"cwd":"/r/w"}}`, "send", `{"method":"b","params":{"cwd":"/r/w"}}`},
		client:   []string{`{"method":"a","params":{"cwd":"/c/0"}}`, `{"method":"b","params":{"cwd":"/c/1"}}`},
	}, {
		name:     "another recorded cwd is learned anew",
		recorded: []string{"send", `{"method":"a","params":{"cwd":"/r/w"}}`, "send", `{"method":"b","params":{"cwd":"/r/w/sub"}}`, "recv", `{"method":"c","params":{"p":"/r/w/sub/f","q":"/r/w/f"}}`},
		client:   []string{`{"method":"a","params":{"cwd":"/c/0"}}`, `{"method":"b","params":{"cwd":"/d/1"}}`},
		want:     []string{`{"method":"c","params":{"p":"/d/1/f","q":"/c/0/f"}}`},
		match:    true,
	}, {
		name:     "a cwd is not learned from a line that misses",
		recorded: []string{"send", `{"method":"a","params":{"cwd":"/r/w","n":1}}`, "send", `{"method":"a","params":{"cwd":"/r/w","n":2}}`, "recv", `{"method":"c","params":{"p":"/r/w"}}`},
		client:   []string{`{"method":"a","params":{"cwd":"/c/0","n":2}}`, `{"method":"a","params":{"cwd":"/c/0","n":1}}`},
		want:     []string{`{"method":"c","params":{"p":"/c/0"}}`},
		match:    true,
	}, {
		name:     "a recorded line that was not JSON",
		recorded: []string{"send", `"this is not json"`, "recv", `"nor is this"`},
		client:   []string{`this is not json`},
		want:     []string{`nor is this`},
		match:    true,
	}, {
		name:     "a recorded line that was not JSON, sent otherwise",
		recorded: []string{"send", `"this is not json"`},
		client:   []string{`this is not JSON`},
	}, {
		name:     "escapes and HTML characters are kept as recorded",
		recorded: []string{"send", `{"id":1,"method":"a","params":{"cwd":"/r/w"}}`, "recv", `{"id":1,"result":{"a":"<&>\u00e9","b":"/r/w/<&>\"q\"","c":"\/r\/w"}}`},
		client:   []string{`{"id":2,"method":"a","params":{"cwd":"/c/é"}}`},
		want:     []string{`{"id":2,"result":{"a":"<&>\u00e9","b":"/c/é/<&>\"q\"","c":"/c/é"}}`},
		match:    true,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := transcriptOf(t, tt.recorded...)
			out, err := serveLines(t, tr, tt.client, Options{})
			if tt.match && err != nil {
				t.Fatalf("error %v", err)
			}
			if !tt.match && !errors.Is(err, ErrMiss) {
				t.Fatalf("error %v, want a miss", err)
			}
			if tt.want != nil && strings.Join(out, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("wrote\n%s\nwant\n%s", strings.Join(out, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

func TestRewrite(t *testing.T) {
	p := (&pathMap{}).with(map[string]string{"/r": "/c", "/r/deep": "/d"})
	tests := []struct {
		name, in string
		id       string
		want     string
	}{
		{"nothing to do", `{"id":1,"result":"/r"}`, "", `{"id":1,"result":"/c"}`},
		{"a number id", `{"id":1,"result":{}}`, "7", `{"id":7,"result":{}}`},
		{"a string id", `{"id":"a","result":{}}`, `"b"`, `{"id":"b","result":{}}`},
		{"the id last", `{"result":{"id":1},"id":1}`, "2", `{"result":{"id":1},"id":2}`},
		{"nested ids stay", `{"result":{"id":1,"x":[{"id":1}]},"id":-1}`, "3", `{"result":{"id":1,"x":[{"id":1}]},"id":3}`},
		{"a value named id stays", `{"result":["id"],"id":1}`, "3", `{"result":["id"],"id":3}`},
		{"keys stay", `{"/r/a":"/r/a"}`, "", `{"/r/a":"/c/a"}`},
		{"the longest prefix wins", `["/r/deep/x","/r/deeper"]`, "", `["/d/x","/c/deeper"]`},
		{"inside text", `["cd /r/a && cat /r/deep/b.","/x/r/a /rab"]`, "", `["cd /c/a && cat /d/b.","/x/r/a /rab"]`},
		{"escapes", `["\/r\/x","/r/\"\\\n","\u002fr"]`, "", `["/c/x","/c/\"\\\n","/c"]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var id []byte
			if tt.id != "" {
				id = []byte(tt.id)
			}
			got := string(rewrite([]byte(tt.in), id, p))
			if got != tt.want {
				t.Errorf("rewrite(%s) = %s, want %s", tt.in, got, tt.want)
			}
			if !json.Valid([]byte(got)) {
				t.Errorf("%s is not JSON", got)
			}
		})
	}
	if got := string(rewrite([]byte(`{"a":"/r"}`), nil, &pathMap{})); got != `{"a":"/r"}` {
		t.Errorf("with nothing learned: %s", got)
	}
}

func TestNormalisedText(t *testing.T) {
	v, err := decode([]byte(`{"id":4,"method":"m","params":{"emittedAtMs":1,"email":"e@x","cwd":"/r/w/x","n":1.50}}`))
	if err != nil {
		t.Fatal(err)
	}
	p := (&pathMap{}).with(map[string]string{"/r/w": "/c"})
	got := strings.Join(text(normalise(v, p)), "\n")
	want := `{
  "id": "<request id>",
  "method": "m",
  "params": {
    "cwd": "/c/x",
    "email": "[redacted]",
    "emittedAtMs": "<timestamp>",
    "n": 1.5
  }
}`
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}
