package cassette

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	vcr "github.com/dnaeon/go-vcr/v2/cassette"
)

func hookSession() *Session {
	s := testSession(2, "out")
	s.Hooks = []HookCall{
		{Event: "user_prompt_submit", Payload: `{"session_id":"s","prompt":"hi\nthere"}`,
			Exchanges: []HookExchange{{Hook: "guard", Sent: `{"jsonrpc":"2.0","id":1,"method":"x"}`, Received: `{"jsonrpc":"2.0","id":1,"result":{}}`}}},
		{Event: "turn_end", Payload: `{"text":"done"}`, Refused: true, Hook: "verify", Reason: "run the tests:\n  go test ./..."},
		{Event: "tool_end", Payload: `{}`, Failures: []HookFailure{{Hook: "audit", Event: "tool_end", Detail: "exited 2: 'boom'"}},
			Exchanges: []HookExchange{{Hook: "audit", Sent: `{}`, Failure: "exit status 2"}}},
	}
	return s
}

// The hook calls of a session survive every way a cassette is written and
// read: the appender's live layout, Marshal and Parse, Load from disk; and
// stock go-vcr still loads the file, ignoring them.
func TestSessionHooksRoundTrip(t *testing.T) {
	s := hookSession()
	var c sessionCache
	for _, step := range []*Session{testSession(2, "out"), s} {
		text, err := c.liveSession(step)
		if err != nil {
			t.Fatal(err)
		}
		f, err := Parse(append([]byte("version: 1\n"), text...))
		if err != nil {
			t.Fatalf("%v\n%s", err, text)
		}
		if !reflect.DeepEqual(f.Session, step) {
			t.Errorf("live layout reads back %+v, want %+v\n%s", f.Session, step, text)
		}
	}
	f, err := Parse([]byte(base))
	if err != nil {
		t.Fatal(err)
	}
	f.Session = s
	path := filepath.Join(t.TempDir(), "c.yaml")
	if err := f.Save(path); err != nil {
		t.Fatal(err)
	}
	back, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.Session.Hooks, s.Hooks) {
		t.Errorf("Load: hooks %+v, want %+v", back.Session.Hooks, s.Hooks)
	}
	stock, err := vcr.Load(path[:len(path)-len(".yaml")])
	if err != nil {
		t.Fatalf("stock go-vcr: %v", err)
	}
	if len(stock.Interactions) != 1 || stock.Interactions[0].Response.Body != "ab" {
		t.Errorf("stock go-vcr interactions %+v", stock.Interactions)
	}
	if len(back.Interactions) != 1 || back.Interactions[0].Body() != "ab" {
		data, _ := os.ReadFile(path)
		t.Errorf("interactions changed:\n%s", data)
	}
}

func TestSessionCloneCopiesHooks(t *testing.T) {
	s := hookSession()
	c := s.Clone()
	c.Hooks[0].Event, c.Hooks[0].Exchanges[0].Hook, c.Hooks[2].Failures[0].Detail = "x", "y", "z"
	if !reflect.DeepEqual(s, hookSession()) {
		t.Errorf("Clone shares hook state with the original")
	}
}
