package jsonrpc_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"

	"pgregory.net/rapid"

	"github.com/openmax/openmax/internal/jsonrpc"
	"github.com/openmax/openmax/internal/rapidchecks"
)

// jsonValue draws a JSON value of at most depth levels, as Go values
// encoding/json encodes.
func jsonValue(depth int) *rapid.Generator[any] {
	return rapid.Custom(func(t *rapid.T) any {
		kinds := 5
		if depth > 0 {
			kinds = 7
		}
		switch rapid.IntRange(0, kinds-1).Draw(t, "kind") {
		case 0:
			return nil
		case 1:
			return rapid.Bool().Draw(t, "bool")
		case 2:
			return rapid.Int64().Draw(t, "int")
		case 3:
			return rapid.Float64().Filter(func(f float64) bool { return f == f && f < 1e300 && f > -1e300 }).Draw(t, "float")
		case 4:
			return rapid.String().Draw(t, "string")
		case 5:
			return rapid.SliceOfN(jsonValue(depth-1), 0, 3).Draw(t, "array")
		default:
			return rapid.MapOfN(rapid.String(), jsonValue(depth-1), 0, 3).Draw(t, "object")
		}
	})
}

// anID draws an id of each kind a peer sends: a number (as Int64ID, or
// another spelling of a number), a string, or, for a response, null.
func anID(t *rapid.T, nullable bool) jsonrpc.ID {
	n := 3
	if nullable {
		n = 4
	}
	switch rapid.IntRange(0, n-1).Draw(t, "id kind") {
	case 0:
		return jsonrpc.Int64ID(rapid.Int64().Draw(t, "int id"))
	case 1:
		return jsonrpc.StringID(rapid.String().Draw(t, "string id"))
	case 2:
		raw := rapid.SampledFrom([]string{"1.0", "-0", "1e3", "2.5E-7", "12345678901234567890", "0.000"}).Draw(t, "number id")
		var id jsonrpc.ID
		if err := json.Unmarshal([]byte(raw), &id); err != nil {
			t.Fatal(err)
		}
		return id
	}
	return jsonrpc.ID{}
}

func params(t *rapid.T, what string) any {
	if rapid.Bool().Draw(t, "no "+what) {
		return nil
	}
	return jsonValue(2).Draw(t, what)
}

// aMessage draws any message Encode takes.
func aMessage(t *rapid.T) jsonrpc.Message {
	method := rapid.StringN(1, 20, -1).Draw(t, "method")
	var m jsonrpc.Message
	var err error
	switch rapid.IntRange(0, 3).Draw(t, "message kind") {
	case 0:
		m, err = jsonrpc.NewRequest(anID(t, false), method, params(t, "params"))
	case 1:
		m, err = jsonrpc.NewNotification(method, params(t, "params"))
	case 2:
		m, err = jsonrpc.NewResponse(anID(t, true), params(t, "result"), nil)
	default:
		e := &jsonrpc.Error{Code: rapid.Int64().Draw(t, "code"), Message: rapid.String().Draw(t, "message")}
		if d := params(t, "data"); d != nil {
			e.Data, _ = json.Marshal(d)
		}
		m, err = jsonrpc.NewResponse(anID(t, true), nil, e)
	}
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// sameID reports whether a and b are one id: the same text, or, for a
// string, the same string (Encode escapes <, > and & as encoding/json
// does, which spells the string otherwise).
func sameID(a, b jsonrpc.ID) bool {
	if a.String() == b.String() {
		return true
	}
	as, aok := a.Text()
	bs, bok := b.Text()
	return aok && bok && as == bs
}

// TestRoundTrip: decoding what Encode wrote gives the message back (ids
// kept as sent, params and results byte for byte), and encoding that
// again writes the same line, in both dialects.
func TestRoundTrip(t *testing.T) {
	rapidchecks.Use(t, 1000)
	rapid.Check(t, func(t *rapid.T) {
		m := aMessage(t)
		d := rapid.SampledFrom([]jsonrpc.Dialect{jsonrpc.V2, jsonrpc.Bare}).Draw(t, "dialect")
		line, err := d.Encode(m)
		if err != nil {
			t.Fatalf("Encode(%#v): %v", m, err)
		}
		if bytes.ContainsAny(line, "\r\n") {
			t.Fatalf("a line break in %q", line)
		}
		if has := bytes.HasPrefix(line, []byte(`{"jsonrpc":"2.0",`)); has != (d == jsonrpc.V2) {
			t.Fatalf("dialect %d wrote %s", d, line)
		}
		got, err := d.Decode(line)
		if err != nil {
			t.Fatalf("Decode(%s): %v", line, err)
		}
		if err := equal(m, got); err != nil {
			t.Fatalf("%v\nsent    %#v\nline    %s\ndecoded %#v", err, m, line, got)
		}
		again, err := d.Encode(got)
		if err != nil || !bytes.Equal(again, line) {
			t.Fatalf("re-encoded %s, %v\nfirst      %s", again, err, line)
		}
	})
}

// equal says how the decoded message b differs from the sent one a.
func equal(a, b jsonrpc.Message) error {
	switch a := a.(type) {
	case *jsonrpc.Request:
		b, ok := b.(*jsonrpc.Request)
		if !ok || !sameID(a.ID, b.ID) || a.Method != b.Method || !bytes.Equal(a.Params, b.Params) {
			return fmt.Errorf("the request differs")
		}
	case *jsonrpc.Notification:
		if !reflect.DeepEqual(a, b) {
			return fmt.Errorf("the notification differs")
		}
	case *jsonrpc.Response:
		b, ok := b.(*jsonrpc.Response)
		if !ok {
			return fmt.Errorf("not a response")
		}
		wantID := a.ID
		if !wantID.IsValid() {
			wantID = jsonrpc.ID{}
			if err := json.Unmarshal([]byte("null"), &wantID); err != nil {
				return err
			}
		}
		wantResult := a.Result
		if a.Error == nil && wantResult == nil {
			wantResult = json.RawMessage("null")
		}
		if !sameID(wantID, b.ID) || !bytes.Equal(wantResult, b.Result) || !reflect.DeepEqual(a.Error, b.Error) {
			return fmt.Errorf("the response differs")
		}
	}
	return nil
}

// FuzzDecode: Decode never panics, and whatever it takes encodes and
// decodes back to itself (Encode may refuse what a lax peer sent: an
// empty method, both result and error).
func FuzzDecode(f *testing.F) {
	for _, seed := range []string{
		`{"id":1,"method":"m","params":{"a":1}}`, `{"method":"n"}`, `{"id":"x","result":null}`,
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"p","data":[1]}}`,
		`{"id":true,"result":1,"error":{"code":1,"message":"m"}}`, `[1]`, `{"method":`, `{}`, ``,
	} {
		f.Add(seed, false)
		f.Add(seed, true)
	}
	f.Fuzz(func(t *testing.T, line string, v2 bool) {
		d := jsonrpc.Bare
		if v2 {
			d = jsonrpc.V2
		}
		m, err := d.Decode([]byte(line))
		if err != nil {
			return
		}
		out, err := d.Encode(m)
		if err != nil {
			return
		}
		back, err := d.Decode(out)
		if err != nil {
			t.Fatalf("Decode(Encode(%s)) = %v", out, err)
		}
		if again, err := d.Encode(back); err != nil || !bytes.Equal(again, out) {
			t.Fatalf("re-encoded %s, %v\nfirst      %s", again, err, out)
		}
	})
}
