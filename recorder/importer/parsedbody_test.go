package importer_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/openmax/openmax/recorder/importer"
)

// vcrpyDoc is a one-interaction vcrpy cassette whose request and response
// members are given as YAML lines (indented under request: and response:).
func vcrpyDoc(req, resp string) string {
	indent := func(s string) string {
		var b strings.Builder
		for _, l := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
			b.WriteString("    " + l + "\n")
		}
		return b.String()
	}
	return "interactions:\n- request:\n" + indent("method: POST\nuri: https://api.example.com/v1/chat/completions\n"+req) +
		"  response:\n" + indent("status: {code: 200, message: OK}\n"+resp) + "version: 1\n"
}

// TestParsedBody: a body stored as a YAML structure (pydantic-ai's
// parsed_body) becomes JSON text with the same value, members in file
// order, numbers as spelled, compact or indented to agree with the
// recorded Content-Length, which is otherwise set to the new length.
func TestParsedBody(t *testing.T) {
	tests := []struct {
		name           string
		req, resp      string
		wantReq        string
		wantResp       string
		wantReqLength  string // the request's Content-Length after import
		wantRespLength string
	}{
		{
			name:     "mapping, sequence, scalars in file order",
			req:      "parsed_body:\n  model: m\n  input:\n  - {role: user, content: 'a <b> & \"c\"\\'}\n  stream: true\n  n: null\n  t: -1\n  f: 1.0\n",
			wantReq:  `{"model":"m","input":[{"role":"user","content":"a <b> & \"c\"\\"}],"stream":true,"n":null,"t":-1,"f":1.0}`,
			resp:     "body: {string: 'plain'}\n",
			wantResp: "plain",
		},
		{
			name:     "YAML-only number spellings are rewritten",
			req:      "parsed_body: {hex: 0x1F, oct: 0o17, under: 1_000, plus: +12, half: .5, dot: 1., big: 18446744073709551615, exp: 1e3, neg: -0}\n",
			wantReq:  `{"hex":31,"oct":15,"under":1000,"plus":12,"half":0.5,"dot":1,"big":18446744073709551615,"exp":1e3,"neg":-0}`,
			resp:     "parsed_body: []\n",
			wantResp: "[]",
		},
		{
			name:     "multi-line and non-ASCII strings, quoted look-alikes stay strings",
			req:      "parsed_body:\n  text: |\n    line one\n    ünïcode ✓\n  when: '2001-12-14'\n  yes: 'true'\n  num: '12'\n",
			wantReq:  `{"text":"line one\nünïcode ✓\n","when":"2001-12-14","yes":"true","num":"12"}`,
			resp:     "parsed_body: {}\n",
			wantResp: "{}",
		},
		{
			name:          "a Content-Length agreeing with compact JSON is kept",
			req:           "headers: {content-length: ['13'], content-type: [application/json]}\nparsed_body: {a: [1, 2]}\n",
			wantReq:       `{"a":[1,2]}`,
			wantReqLength: "", // 13 is not 11: set to the new length, see below
			resp:          "headers: {content-length: ['11']}\nparsed_body: {a: [1, 2]}\n",
			wantResp:      `{"a":[1,2]}`,
			// 11 is compact's length: kept.
			wantRespLength: "11",
		},
		{
			name:           "a Content-Length agreeing with two-space indentation picks it",
			resp:           "headers: {content-length: ['48']}\nparsed_body:\n  error: {code: x, n: 1}\n",
			wantResp:       "{\n  \"error\": {\n    \"code\": \"x\",\n    \"n\": 1\n  }\n}",
			wantRespLength: "48",
		},
		{
			name:     "an alias is followed",
			req:      "parsed_body:\n  a: &x {k: v}\n  b: *x\n",
			wantReq:  `{"a":{"k":"v"},"b":{"k":"v"}}`,
			resp:     "parsed_body: null\nbody: {string: ok}\n",
			wantResp: "ok",
		},
		{
			name:     "a body and a parsed_body of the same value read the body",
			req:      "body: '{\"b\": 2, \"a\": 1}'\nparsed_body: {a: 1, b: 2}\n",
			wantReq:  `{"b": 2, "a": 1}`,
			resp:     "body: {string: ''}\n",
			wantResp: "",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			it := importOne(t, importer.VCRPy, vcrpyDoc(tt.req, tt.resp))
			if it.Request.Body != tt.wantReq {
				t.Errorf("request body\n got %s\nwant %s", it.Request.Body, tt.wantReq)
			}
			if it.Response.Body != tt.wantResp {
				t.Errorf("response body\n got %q\nwant %q", it.Response.Body, tt.wantResp)
			}
			// Whatever Content-Length a message carries after import
			// describes its body.
			for side, h := range map[string]struct{ got, body, want string }{
				"request":  {it.Request.Headers.Get("Content-Length"), it.Request.Body, tt.wantReqLength},
				"response": {it.Response.Headers.Get("Content-Length"), it.Response.Body, tt.wantRespLength},
			} {
				if h.got != "" && h.got != fmt.Sprint(len(h.body)) {
					t.Errorf("%s: Content-Length %s for a %d-byte body", side, h.got, len(h.body))
				}
				if h.want != "" && h.got != h.want {
					t.Errorf("%s: Content-Length %q, want %q", side, h.got, h.want)
				}
			}
		})
	}
}

// TestUnreadableBodies: a body the importer cannot turn into text is
// refused with an error naming the interaction and the member, never
// imported as an empty body.
func TestUnreadableBodies(t *testing.T) {
	tests := []struct {
		name      string
		req, resp string
		want      []string // in the error
	}{
		{"binary inside parsed_body", "parsed_body: {blob: !!binary aGk=}\n", "", []string{"interaction 0", "request parsed_body", "!!binary"}},
		{"infinity", "", "parsed_body: {x: .inf}\n", []string{"interaction 0", "response parsed_body", ".inf has no JSON form"}},
		{"not a number", "", "parsed_body: [.nan]\n", []string{"response parsed_body", ".nan"}},
		{"timestamp", "parsed_body: {at: 2001-12-14}\n", "", []string{"request parsed_body", "!!timestamp"}},
		{"custom tag on a mapping", "", "parsed_body: !python/object {a: 1}\n", []string{"response parsed_body", "!python/object"}},
		{"custom tag on a sequence", "", "parsed_body: {a: !!set [1]}\n", []string{"response parsed_body", "!!set"}},
		{"custom tag on a scalar", "parsed_body: {a: !decimal 1.5}\n", "", []string{"request parsed_body", "!decimal"}},
		{"merge key", "parsed_body:\n  base: &b {x: 1}\n  more: {<<: *b, y: 2}\n", "", []string{"request parsed_body", "merge key"}},
		{"mapping as a key", "parsed_body: {? [a, b] : c}\n", "", []string{"request parsed_body", "mapping key"}},
		{"differing body and parsed_body", "body: '{\"a\": 1}'\nparsed_body: {a: 2}\n", "", []string{"interaction 0", "request", "differ"}},
		{"a body mapping without string", "", "body: {json: {a: 1}}\n", []string{"interaction 0", "response body", "json"}},
		{"a body mapping with string and more", "", "body: {string: x, encoding: utf-8}\n", []string{"response body", "encoding"}},
		{"an empty body mapping", "", "body: {}\n", []string{"response body", "empty mapping"}},
		{"a body mapping whose string is not text", "", "body: {string: [a]}\n", []string{"response body", "sequence"}},
		{"a sequence body", "body: [a]\n", "", []string{"request body", "sequence"}},
		{"a stray body member", "json_body: {a: 1}\n", "", []string{"interaction 0", "request.json_body"}},
		{"a stray response body member", "", "raw_body: abc\n", []string{"interaction 0", "response.raw_body"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := vcrpyDoc(tt.req, tt.resp)
			f, err := importer.Import(importer.Auto, []byte(doc))
			if err == nil {
				t.Fatalf("imported: request %q, response %q", f.Interactions[0].Request.Body, f.Interactions[0].Response.Body)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

// TestUnreadableBodyNamesItsInteraction: the error names the failing
// interaction among several.
func TestUnreadableBodyNamesItsInteraction(t *testing.T) {
	ok := "- request: {method: GET, uri: 'http://h/a'}\n  response: {status: {code: 200, message: OK}, body: {string: fine}}\n"
	bad := "- request: {method: GET, uri: 'http://h/b'}\n  response: {status: {code: 200, message: OK}, parsed_body: {x: .inf}}\n"
	_, err := importer.Import(importer.VCRPy, []byte("version: 1\ninteractions:\n"+ok+ok+bad))
	if err == nil || !strings.Contains(err.Error(), "interaction 2: response parsed_body") {
		t.Fatalf("error %v, want one naming interaction 2's response parsed_body", err)
	}
}
