package appserver

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/openmax/openmax/internal/jsonrpc"
)

// Ids are matched by value (two spellings of one id are one id) and
// written back to the client as it sent them.
func TestIDsMatchByValueAndGoBackAsSent(t *testing.T) {
	for _, tt := range []struct{ a, b string }{
		{`"A"`, `"\u0041"`},
		{`"a<b"`, `"a\u003cb"`},
		{`7`, `7`},
		{`1.50`, `1.50`},
		{`null`, `null`},
		{`{"b":1,"a":"x"}`, `{"a":"x","b":1}`},
	} {
		var a, b jsonrpc.ID
		if err := json.Unmarshal([]byte(tt.a), &a); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal([]byte(tt.b), &b); err != nil {
			t.Fatal(err)
		}
		if matchID(a) != matchID(b) {
			t.Errorf("%s matched as %s, %s as %s", tt.a, matchID(a), tt.b, matchID(b))
		}
	}
	if matchID(jsonrpc.Int64ID(1)) == matchID(jsonrpc.StringID("1")) {
		t.Error(`1 and "1" matched as one id`)
	}

	tr, err := Parse(strings.NewReader(`{"dir":"send","msg":{"id":1,"method":"m"}}
{"dir":"recv","msg":{"id":1,"result":{}}}
{"dir":"send","msg":{"id":2,"method":"m"}}
`), 0)
	if err != nil {
		t.Fatal(err)
	}
	out, err := serveLines(t, tr, []string{`{"id":"\u0041","method":"m"}`, `{"id":"x<y","method":"other"}`}, Options{})
	if err == nil || len(out) != 2 {
		t.Fatalf("wrote %q, %v; want the response and a miss", out, err)
	}
	if out[0] != `{"id":"\u0041","result":{}}` {
		t.Errorf("the recorded response went out as %s, want the client's id as it sent it", out[0])
	}
	if id, code, _ := missAnswer(t, out[1]); id != `"x\u003cy"` || code != MissCode {
		t.Errorf("the miss was answered with id %s, code %d", id, code)
	}
}
