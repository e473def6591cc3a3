package wire

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// parseObject must agree with encoding/json on every valid object without
// duplicate keys: same keys, and each raw value decoding to the same thing.
func FuzzParseObject(f *testing.F) {
	for _, seed := range []string{
		`{}`, ` { "a" : 1 , "b":[1,{"c":"}"}] } `, `{"k\"ey":"v\\\"al","n":null,"t":true,"f":-1.5e3}`,
		`{"a":{"b":{"c":[[],[{}]]}},"s":"\u00e9]}"}`, `{"a":1,"a":2}`, `[1]`, `"x"`, `{"a":`, `null`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var want map[string]any
		werr := json.Unmarshal(data, &want)
		o, err := parseObject(data)
		if werr != nil || want == nil {
			if err == nil {
				t.Fatalf("parseObject accepted %q, encoding/json said %v", data, werr)
			}
			return
		}
		if err != nil {
			// Duplicate keys are the one valid thing parseObject refuses.
			if !strings.Contains(err.Error(), "duplicate field") {
				t.Fatalf("parseObject refused %q: %v", data, err)
			}
			return
		}
		got := map[string]any{}
		for _, m := range o {
			var v any
			if err := json.Unmarshal(m.raw, &v); err != nil {
				t.Fatalf("member %q raw %q does not decode: %v", m.key, m.raw, err)
			}
			got[string(m.key)] = v
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q:\n got %v\nwant %v", data, got, want)
		}
	})
}

func TestParseObjectErrors(t *testing.T) {
	tests := map[string]string{
		`{"a":1,"a":2}`: `duplicate field "a"`,
		`[1,2]`:         "not an object: got array",
		`{"a":}`:        "invalid character",
		``:              "unexpected end of JSON input",
	}
	for in, want := range tests {
		_, err := parseObject([]byte(in))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: got %v, want %q", in, err, want)
		}
	}
	if got := splitArray([]byte(` [ 1 , "a,]" , {"b":[2]} ] `)); len(got) != 3 || string(got[1]) != `"a,]"` || string(got[2]) != `{"b":[2]}` {
		t.Errorf("splitArray: %q", got)
	}
}
