package jsonrpc_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/openmax/openmax/internal/jsonrpc"
)

// id reads the JSON text raw as an id, as Decode would keep it.
func id(t *testing.T, raw string) jsonrpc.ID {
	t.Helper()
	var v jsonrpc.ID
	if err := json.Unmarshal([]byte(raw), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func TestIDs(t *testing.T) {
	tests := []struct {
		name   string
		id     jsonrpc.ID
		raw    string
		kind   jsonrpc.IDKind
		n      int64
		isInt  bool
		text   string
		isText bool
	}{
		{"none", jsonrpc.ID{}, "", jsonrpc.IDNone, 0, false, "", false},
		{"zero", jsonrpc.Int64ID(0), "0", jsonrpc.IDNumber, 0, true, "", false},
		{"negative", jsonrpc.Int64ID(-7), "-7", jsonrpc.IDNumber, -7, true, "", false},
		{"largest", jsonrpc.Int64ID(1<<63 - 1), "9223372036854775807", jsonrpc.IDNumber, 1<<63 - 1, true, "", false},
		{"a string", jsonrpc.StringID("s-1"), `"s-1"`, jsonrpc.IDString, 0, false, "s-1", true},
		{"a string that looks like a number", jsonrpc.StringID("1"), `"1"`, jsonrpc.IDString, 0, false, "1", true},
		{"a string with HTML and a newline", jsonrpc.StringID("<a&b>\n"), `"<a&b>\n"`, jsonrpc.IDString, 0, false, "<a&b>\n", true},
		{"an escaped string, as sent", id(t, `"\u0041"`), `"\u0041"`, jsonrpc.IDString, 0, false, "A", true},
		{"a fraction", id(t, `1.0`), `1.0`, jsonrpc.IDNumber, 0, false, "", false},
		{"an exponent", id(t, `1e3`), `1e3`, jsonrpc.IDNumber, 0, false, "", false},
		{"past int64", id(t, `12345678901234567890`), `12345678901234567890`, jsonrpc.IDNumber, 0, false, "", false},
		{"null", id(t, `null`), `null`, jsonrpc.IDNull, 0, false, "", false},
		{"a bool, from a lax peer", id(t, `true`), `true`, jsonrpc.IDOther, 0, false, "", false},
		{"an object, from a lax peer", id(t, `{"a":1}`), `{"a":1}`, jsonrpc.IDOther, 0, false, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.id.String(); got != tt.raw {
				t.Errorf("String() = %s, want %s", got, tt.raw)
			}
			if got := string(tt.id.Raw()); got != tt.raw {
				t.Errorf("Raw() = %s, want %s", got, tt.raw)
			}
			if got := tt.id.Kind(); got != tt.kind {
				t.Errorf("Kind() = %d, want %d", got, tt.kind)
			}
			if got := tt.id.IsValid(); got != (tt.kind != jsonrpc.IDNone) {
				t.Errorf("IsValid() = %v", got)
			}
			if n, ok := tt.id.Int64(); n != tt.n || ok != tt.isInt {
				t.Errorf("Int64() = %d, %v; want %d, %v", n, ok, tt.n, tt.isInt)
			}
			if s, ok := tt.id.Text(); s != tt.text || ok != tt.isText {
				t.Errorf("Text() = %q, %v; want %q, %v", s, ok, tt.text, tt.isText)
			}
		})
	}
	var bad jsonrpc.ID
	if err := bad.UnmarshalJSON([]byte(`{"a"`)); err == nil {
		t.Error("an id that is not JSON was taken")
	}
	if b, err := json.Marshal(jsonrpc.ID{}); err != nil || string(b) != "null" {
		t.Errorf("no id marshals as %s, %v; want null", b, err)
	}
}

func TestDecode(t *testing.T) {
	req := func(raw, method, params string) *jsonrpc.Request {
		r := &jsonrpc.Request{ID: id(t, raw), Method: method}
		if params != "" {
			r.Params = json.RawMessage(params)
		}
		return r
	}
	resp := func(raw, result string, e *jsonrpc.Error) *jsonrpc.Response {
		r := &jsonrpc.Response{ID: id(t, raw), Error: e}
		if result != "" {
			r.Result = json.RawMessage(result)
		}
		return r
	}
	var parseError *jsonrpc.ParseError
	tests := []struct {
		name    string
		dialect jsonrpc.Dialect
		line    string
		want    jsonrpc.Message
		err     any // an error for errors.Is, or a pointer for errors.As
	}{
		{"a request, number id", jsonrpc.Bare, `{"id":1,"method":"m","params":{"a":[1,"<"]}}`, req("1", "m", `{"a":[1,"<"]}`), nil},
		{"a request, string id", jsonrpc.Bare, `{"id":"s4","method":"m"}`, req(`"s4"`, "m", ""), nil},
		{"a request, id 0", jsonrpc.Bare, `{"id":0,"method":"m"}`, req("0", "m", ""), nil},
		{"a request, escaped string id kept as sent", jsonrpc.Bare, `{"id":"\u0041","method":"m"}`, req(`"\u0041"`, "m", ""), nil},
		{"a request, fractional id kept as sent", jsonrpc.Bare, `{"id":1.50,"method":"m"}`, req("1.50", "m", ""), nil},
		{"a request with an empty method", jsonrpc.Bare, `{"id":1,"method":""}`, req("1", "", ""), nil},
		{"a request, V2", jsonrpc.V2, `{"jsonrpc":"2.0","id":2,"method":"m","params":[1]}`, req("2", "m", "[1]"), nil},
		{"a notification", jsonrpc.Bare, `{"method":"n","params":{"x":1},"emittedAtMs":5}`,
			&jsonrpc.Notification{Method: "n", Params: json.RawMessage(`{"x":1}`)}, nil},
		{"a notification with null params", jsonrpc.Bare, `{"method":"n","params":null}`,
			&jsonrpc.Notification{Method: "n", Params: json.RawMessage(`null`)}, nil},
		{"a notification, white space after", jsonrpc.Bare, `{ "method" : "n" }  `, &jsonrpc.Notification{Method: "n"}, nil},
		{"a response", jsonrpc.Bare, `{"id":1,"result":{"ok":true}}`, resp("1", `{"ok":true}`, nil), nil},
		{"a null result", jsonrpc.Bare, `{"id":1,"result":null}`, resp("1", "null", nil), nil},
		{"an error response", jsonrpc.Bare, `{"id":"x","error":{"code":-32601,"message":"no","data":{"why":1}}}`,
			resp(`"x"`, "", &jsonrpc.Error{Code: -32601, Message: "no", Data: json.RawMessage(`{"why":1}`)}), nil},
		{"an error response, null id", jsonrpc.V2, `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse"}}`,
			resp("null", "", &jsonrpc.Error{Code: -32700, Message: "parse"}), nil},
		{"both result and error, kept", jsonrpc.Bare, `{"id":1,"result":{},"error":{"code":1,"message":"m"}}`,
			resp("1", "{}", &jsonrpc.Error{Code: 1, Message: "m"}), nil},
		{"neither result nor error, kept", jsonrpc.Bare, `{"id":1}`, resp("1", "", nil), nil},
		{"a null method is none", jsonrpc.Bare, `{"id":1,"method":null,"result":1}`, resp("1", "1", nil), nil},
		{"a null error is none", jsonrpc.Bare, `{"id":1,"error":null,"result":1}`, resp("1", "1", nil), nil},
		{"a bool id from a lax peer", jsonrpc.Bare, `{"id":true,"result":1}`, resp("true", "1", nil), nil},
		{"Bare ignores jsonrpc", jsonrpc.Bare, `{"jsonrpc":5,"method":"n"}`, &jsonrpc.Notification{Method: "n"}, nil},

		{"a batch", jsonrpc.Bare, `[{"id":1,"method":"m"}]`, nil, jsonrpc.ErrBatch},
		{"a batch is not an object", jsonrpc.V2, `[]`, nil, jsonrpc.ErrNotObject},
		{"text", jsonrpc.Bare, `hello`, nil, jsonrpc.ErrNotObject},
		{"a string", jsonrpc.Bare, `"hello"`, nil, jsonrpc.ErrNotObject},
		{"a number", jsonrpc.Bare, `5`, nil, jsonrpc.ErrNotObject},
		{"empty", jsonrpc.Bare, ``, nil, jsonrpc.ErrNotObject},
		{"white space first", jsonrpc.Bare, ` {"method":"n"}`, nil, jsonrpc.ErrNotObject},
		{"cut short", jsonrpc.Bare, `{"method":`, nil, &parseError},
		{"a second value", jsonrpc.Bare, `{"method":"n"} {}`, nil, &parseError},
		{"a method that is a number", jsonrpc.Bare, `{"id":1,"method":5}`, nil, &parseError},
		{"an error that is a string", jsonrpc.Bare, `{"id":1,"error":"boom"}`, nil, &parseError},
		{"a fractional error code", jsonrpc.Bare, `{"id":1,"error":{"code":1.5,"message":"m"}}`, nil, &parseError},
		{"no method, no id", jsonrpc.Bare, `{"params":{}}`, nil, jsonrpc.ErrNotMessage},
		{"an empty object", jsonrpc.V2, `{"jsonrpc":"2.0"}`, nil, jsonrpc.ErrNotMessage},
		{"V2 without jsonrpc", jsonrpc.V2, `{"id":1,"result":{}}`, nil, jsonrpc.ErrVersion},
		{"V2 with another version", jsonrpc.V2, `{"jsonrpc":"1.0","id":1,"result":{}}`, nil, jsonrpc.ErrVersion},
		{"V2 with a null version", jsonrpc.V2, `{"jsonrpc":null,"id":1,"result":{}}`, nil, jsonrpc.ErrVersion},
		{"V2 with a version that is a number", jsonrpc.V2, `{"jsonrpc":2,"id":1,"result":{}}`, nil, &parseError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.dialect.Decode([]byte(tt.line))
			switch want := tt.err.(type) {
			case nil:
				if err != nil {
					t.Fatalf("Decode(%s): %v", tt.line, err)
				}
				if !reflect.DeepEqual(got, tt.want) {
					t.Fatalf("Decode(%s) = %#v, want %#v", tt.line, got, tt.want)
				}
			case error:
				if !errors.Is(err, want) || got != nil {
					t.Fatalf("Decode(%s) = %v, %v; want %v", tt.line, got, err, want)
				}
			default:
				if !errors.As(err, want) || got != nil {
					t.Fatalf("Decode(%s) = %v, %v; want a %T", tt.line, got, err, want)
				}
			}
		})
	}
}

func TestResponseErr(t *testing.T) {
	both := &jsonrpc.Response{ID: jsonrpc.Int64ID(1), Result: json.RawMessage(`{}`), Error: &jsonrpc.Error{Code: 3, Message: "m"}}
	if err := both.Err(); err == nil || err.Error() != "jsonrpc error 3: m" {
		t.Errorf("a response with both: Err() = %v, want the error", err)
	}
	if err := (&jsonrpc.Response{ID: jsonrpc.Int64ID(1), Result: json.RawMessage(`1`)}).Err(); err != nil {
		t.Errorf("a result: Err() = %v", err)
	}
}

func TestEncode(t *testing.T) {
	mustReq := func(r *jsonrpc.Request, err error) *jsonrpc.Request {
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	mustNote := func(n *jsonrpc.Notification, err error) *jsonrpc.Notification {
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	mustResp := func(r *jsonrpc.Response, err error) *jsonrpc.Response {
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	tests := []struct {
		name    string
		dialect jsonrpc.Dialect
		m       jsonrpc.Message
		want    string // "" when Encode must refuse it
	}{
		{"a request", jsonrpc.Bare, mustReq(jsonrpc.NewRequest(jsonrpc.Int64ID(1), "thread/start", map[string]any{"cwd": "/w"})),
			`{"id":1,"method":"thread/start","params":{"cwd":"/w"}}`},
		{"a request, V2", jsonrpc.V2, mustReq(jsonrpc.NewRequest(jsonrpc.Int64ID(3), "hook/intercept", struct{ V string }{"x"})),
			`{"jsonrpc":"2.0","id":3,"method":"hook/intercept","params":{"V":"x"}}`},
		{"a request with nil params", jsonrpc.Bare, mustReq(jsonrpc.NewRequest(jsonrpc.StringID("a"), "m", nil)), `{"id":"a","method":"m"}`},
		{"a request with typed nil params", jsonrpc.Bare, mustReq(jsonrpc.NewRequest(jsonrpc.Int64ID(1), "m", (*struct{})(nil))),
			`{"id":1,"method":"m","params":null}`},
		{"a notification", jsonrpc.Bare, mustNote(jsonrpc.NewNotification("initialized", nil)), `{"method":"initialized"}`},
		{"a notification, V2", jsonrpc.V2, mustNote(jsonrpc.NewNotification("hook/observe", []int{1})),
			`{"jsonrpc":"2.0","method":"hook/observe","params":[1]}`},
		{"a result", jsonrpc.Bare, mustResp(jsonrpc.NewResponse(jsonrpc.StringID("s4"), map[string]string{"decision": "accept"}, nil)),
			`{"id":"s4","result":{"decision":"accept"}}`},
		{"an id kept as sent", jsonrpc.Bare, &jsonrpc.Response{ID: id(t, `1.50`), Result: json.RawMessage(`{}`)}, `{"id":1.50,"result":{}}`},
		{"an error", jsonrpc.Bare, mustResp(jsonrpc.NewResponse(jsonrpc.Int64ID(7), "ignored", &jsonrpc.Error{Code: -32601, Message: "no"})),
			`{"id":7,"error":{"code":-32601,"message":"no"}}`},
		{"an error with data", jsonrpc.V2, &jsonrpc.Response{ID: jsonrpc.Int64ID(7), Error: &jsonrpc.Error{Code: 1, Message: "m", Data: json.RawMessage(`[1]`)}},
			`{"jsonrpc":"2.0","id":7,"error":{"code":1,"message":"m","data":[1]}}`},
		{"no result is null", jsonrpc.Bare, mustResp(jsonrpc.NewResponse(jsonrpc.Int64ID(1), nil, nil)), `{"id":1,"result":null}`},
		{"no id is null", jsonrpc.Bare, &jsonrpc.Response{Error: &jsonrpc.Error{Code: jsonrpc.CodeParseError, Message: "parse"}},
			`{"id":null,"error":{"code":-32700,"message":"parse"}}`},
		{"HTML and newlines escaped, one line", jsonrpc.Bare, &jsonrpc.Response{ID: jsonrpc.StringID("<id>"), Error: &jsonrpc.Error{Code: 1, Message: "a <b> & \nc\u2028"}},
			`{"id":"\u003cid\u003e","error":{"code":1,"message":"a \u003cb\u003e \u0026 \nc\u2028"}}`},

		{"a request without an id", jsonrpc.Bare, &jsonrpc.Request{Method: "m"}, ""},
		{"a request without a method", jsonrpc.Bare, &jsonrpc.Request{ID: jsonrpc.Int64ID(1)}, ""},
		{"a notification without a method", jsonrpc.Bare, &jsonrpc.Notification{}, ""},
		{"a response with both", jsonrpc.Bare, &jsonrpc.Response{ID: jsonrpc.Int64ID(1), Result: json.RawMessage(`1`), Error: &jsonrpc.Error{}}, ""},
		{"params that are not JSON", jsonrpc.Bare, &jsonrpc.Notification{Method: "m", Params: json.RawMessage(`{`)}, ""},
		{"no message", jsonrpc.Bare, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.dialect.Encode(tt.m)
			if tt.want == "" {
				if err == nil {
					t.Fatalf("Encode = %s, want it refused", got)
				}
				return
			}
			if err != nil || string(got) != tt.want {
				t.Fatalf("Encode = %s, %v\nwant   %s", got, err, tt.want)
			}
			if strings.ContainsAny(string(got), "\r\n") {
				t.Errorf("the line holds a line break: %q", got)
			}
		})
	}
	if _, err := jsonrpc.NewRequest(jsonrpc.Int64ID(1), "m", make(chan int)); err == nil {
		t.Error("params that cannot be encoded were taken")
	}
	if _, err := jsonrpc.NewNotification("m", func() {}); err == nil {
		t.Error("params that cannot be encoded were taken")
	}
	if _, err := jsonrpc.NewResponse(jsonrpc.Int64ID(1), make(chan int), nil); err == nil {
		t.Error("a result that cannot be encoded was taken")
	}
}
