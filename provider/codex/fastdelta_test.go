package codex

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// general routes line through the general path (encoding/json) and
// returns the event it delivers, or the bad-line error.
func general(line []byte) (ev Event, delivered bool, bad error) {
	c := &conn{deliver: func(e Event) { ev, delivered = e, true }, onBadLine: func(_ []byte, err error) { bad = err }}
	c.routeDecoded(line)
	return ev, delivered, bad
}

// sameEvent fails t unless the fast path's event is the general path's.
func sameEvent(t interface {
	Helper()
	Fatalf(string, ...any)
}, line []byte, fast Event) {
	t.Helper()
	slow, delivered, bad := general(line)
	if !delivered || bad != nil {
		t.Fatalf("the fast path read %s, the general path: delivered %v, bad line %v", line, delivered, bad)
	}
	if fast.Method != slow.Method || !bytes.Equal(fast.Params, slow.Params) || fast.EmittedAtMs != slow.EmittedAtMs || fast.IsRequest() {
		t.Fatalf("line %s:\nfast %q %s %d\nslow %q %s %d", line, fast.Method, fast.Params, fast.EmittedAtMs, slow.Method, slow.Params, slow.EmittedAtMs)
	}
	fv, ferr := fast.Decode()
	sv, serr := slow.Decode()
	if ferr != nil || serr != nil || !reflect.DeepEqual(fv, sv) {
		t.Fatalf("line %s: decoded fast %#v (%v), slow %#v (%v)", line, fv, ferr, sv, serr)
	}
}

// TestDeltaLineReadsCodexsSpelling: the lines codex writes take the fast
// path, and it reads them as the general path does.
func TestDeltaLineReadsCodexsSpelling(t *testing.T) {
	for _, line := range []string{
		`{"method":"item/agentMessage/delta","params":{"threadId":"019a","turnId":"u1","itemId":"msg_1","delta":"w0 "},"emittedAtMs":1796407382072}`,
		`{"method":"item/agentMessage/delta","params":{"delta":"a \"quoted\"\\n\u00e9\ud83d\ude00 \/","itemId":"m","turnId":"u","threadId":"t"},"emittedAtMs":0}`,
		`{"method":"item/agentMessage/delta","params":{"threadId":"t","turnId":"u","itemId":"m","delta":"日本語"}}`,
		`{"method":"item/agentMessage/delta","params":{"threadId":"t","turnId":"u","itemId":"m","delta":"lone \ud800 surrogate"},"emittedAtMs":-5}` + " \r",
		`{"method":"item/agentMessage/delta","params":{}}`,
	} {
		ev, ok := deltaLine([]byte(line))
		if !ok {
			t.Errorf("not read: %s", line)
			continue
		}
		sameEvent(t, []byte(line), ev)
	}
}

// TestDeltaLineMatchesTheGeneralPath: for delta lines spelled any way
// (members in any order, missing, repeated or unknown, values that are
// not strings, escapes, invalid UTF-8, control characters, whitespace,
// emittedAtMs in any spelling), the fast path either leaves the line to
// the general path or returns exactly its event and decoded params.
func TestDeltaLineMatchesTheGeneralPath(t *testing.T) {
	pieces := []string{"a", " ", "\"", "\\", "/", "\n", "\t", "\x00", "\x1f", "é", "😀", "\xff", "\xc3", "\u2028", "<>&"}
	escapes := []string{`\"`, `\\`, `\/`, `\b`, `\f`, `\n`, `\r`, `\t`, `\u00e9`, `\ud83d\ude00`, `\ud800`, `\udc00x`, `\u0000`, `\x`, `\u12`, `\U0041`}
	str := func(t *rapid.T, label string) string {
		var b strings.Builder
		for range rapid.IntRange(0, 6).Draw(t, label+" pieces") {
			if rapid.Bool().Draw(t, label+" escape") {
				b.WriteString(rapid.SampledFrom(escapes).Draw(t, label+" esc"))
				continue
			}
			s := rapid.SampledFrom(pieces).Draw(t, label+" piece")
			if rapid.Bool().Draw(t, label+" raw") {
				b.WriteString(s) // as is: control characters and invalid UTF-8 too
			} else {
				q, _ := json.Marshal(s)
				b.Write(q[1 : len(q)-1])
			}
		}
		return `"` + b.String() + `"`
	}
	rapid.Check(t, func(t *rapid.T) {
		keys := rapid.SliceOfN(rapid.SampledFrom([]string{"threadId", "turnId", "itemId", "delta", "Delta", "other", `thread\u0049d`}), 0, 6).Draw(t, "keys")
		var members []string
		for i, k := range keys {
			v := str(t, fmt.Sprint("value ", i))
			switch rapid.IntRange(0, 9).Draw(t, fmt.Sprint("kind ", i)) {
			case 0:
				v = "7"
			case 1:
				v = "null"
			case 2:
				v = " " + v
			}
			members = append(members, `"`+k+`":`+v)
		}
		params := "{" + strings.Join(members, ",") + "}"
		if rapid.IntRange(0, 9).Draw(t, "spaced") == 0 {
			params = strings.Replace(params, ",", ", ", 1)
		}
		tail := rapid.SampledFrom([]string{"}", "} ", "}\r", `,"emittedAtMs":1796407382072}`, `,"emittedAtMs":0}`, `,"emittedAtMs":-0}`, `,"emittedAtMs":-12}`,
			`,"emittedAtMs":01}`, `,"emittedAtMs":+1}`, `,"emittedAtMs":1.5}`, `,"emittedAtMs":1e3}`, `,"emittedAtMs":99999999999999999999}`, `,"emittedAtMs":}`,
			`,"emittedAtMs":"1"}`, `,"other":1}`, `,"emittedAtMs":1,"x":2}`, ``, `}}`}).Draw(t, "tail")
		line := []byte(`{"method":"item/agentMessage/delta","params":` + params + tail)
		if ev, ok := deltaLine(line); ok {
			sameEvent(t, line, ev)
		}
	})
}
