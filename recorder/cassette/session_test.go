package cassette

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/openmax/openmax/core/harness"
)

// A cassette recorded before the configuration was stored keeps the
// command line; Parse reads it into the typed Config once, and a saved
// cassette then carries the Config (durations as text) and no flags.
func TestSessionConfigFromLegacyArgs(t *testing.T) {
	legacy := base + `openmax:
  session_id: s-1
  seed: 3
  args: [--project, /p, --provider, openai, --model, gpt-x, --max-attempts, "2", --idle-timeout=5s, --max-reply-bytes, 1MiB]
  commands: []
`
	f, err := Parse([]byte(legacy))
	if err != nil {
		t.Fatal(err)
	}
	want := harness.Defaults()
	want.Project, want.Provider, want.Model, want.MaxAttempts, want.IdleTimeout, want.MaxReplyBytes = "/p", "openai", "gpt-x", 2, 5*time.Second, 1<<20
	if s := f.Session; s.Config == nil || !reflect.DeepEqual(*s.Config, want) || s.Args != nil {
		t.Fatalf("session after Parse: config %+v, args %q; want config %+v and no args", s.Config, s.Args, want)
	}
	out, err := f.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"config:", "provider: openai", "idle_timeout: 5s", "max_attempts: 2", "max_reply_bytes: 1048576"} {
		if !strings.Contains(string(out), w) {
			t.Errorf("saved cassette lacks %q:\n%s", w, out)
		}
	}
	if strings.Contains(string(out), "args:") {
		t.Errorf("saved cassette still has the flags:\n%s", out)
	}
	again, err := Parse(out)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(*again.Session.Config, want) {
		t.Errorf("round trip: %+v, want %+v", *again.Session.Config, want)
	}
}

func TestSessionConfigRefusesBadLegacyArgs(t *testing.T) {
	for _, tt := range []struct{ args, want string }{
		{`[--max-attempts, "0"]`, "--max-attempts must be at least 1"},
		{`[--idle-timeout, soon]`, `invalid value "soon" for flag -idle-timeout`},
		{`[--provider]`, "flag needs an argument: -provider"},
		{`[stray]`, `unexpected argument "stray"`},
	} {
		_, err := Parse([]byte(base + "openmax:\n  session_id: s\n  args: " + tt.args + "\n"))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("args %s: got %v, want an error containing %q", tt.args, err, tt.want)
		}
	}
}

func TestSessionCloneIsDeep(t *testing.T) {
	cfg := harness.Defaults()
	s := &Session{SessionID: "s", Config: &cfg, Commands: []Command{{Line: "a"}}, Tools: []Tool{{Name: "t"}}, ToolResults: []ToolResult{{Name: "t"}}}
	c := s.Clone()
	c.Config.Model, c.Commands[0].Line, c.Tools[0].Name, c.ToolResults[0].Name = "changed", "b", "u", "u"
	if s.Config.Model != "" || s.Commands[0].Line != "a" || s.Tools[0].Name != "t" || s.ToolResults[0].Name != "t" {
		t.Errorf("Clone shares state with the original: %+v", s)
	}
	if (*Session)(nil).Clone() != nil {
		t.Error("Clone of nil")
	}
}
