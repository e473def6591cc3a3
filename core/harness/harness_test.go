package harness_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/openmax/openmax/core/harness"
)

// world is a temporary home: settings and sessions live under it, and the
// project is a directory inside it.
type world struct {
	project string
	env     map[string]string
}

func newWorld(t *testing.T, trusted bool) world {
	t.Helper()
	root := t.TempDir()
	w := world{project: filepath.Join(root, "project"), env: map[string]string{
		"XDG_CONFIG_HOME": filepath.Join(root, "config"),
		"XDG_STATE_HOME":  filepath.Join(root, "state"),
	}}
	if err := os.Mkdir(w.project, 0o755); err != nil {
		t.Fatal(err)
	}
	if trusted {
		if _, err := harness.Trust(w.project, w.getenv); err != nil {
			t.Fatal(err)
		}
	}
	return w
}

func (w world) getenv(k string) string { return w.env[k] }

func (w world) harness(t *testing.T, mutate func(*harness.Config)) *harness.Harness {
	t.Helper()
	cfg := harness.Defaults()
	cfg.Provider, cfg.Project = "echo", w.project
	if mutate != nil {
		mutate(&cfg)
	}
	h, err := harness.New(cfg, harness.Deps{Getenv: w.getenv})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// types lists the type of each line of a transcript.
func types(t *testing.T, out []byte) []string {
	t.Helper()
	var got []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		var l struct{ Type string }
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("not a JSON line: %q", sc.Text())
		}
		got = append(got, l.Type)
	}
	return got
}

func TestDefaultsAreTheFlagDefaults(t *testing.T) {
	cfg, err := harness.FromArgs(nil)
	if err != nil || !reflect.DeepEqual(cfg, harness.Defaults()) {
		t.Fatalf("FromArgs(nil) = %+v, %v; want the defaults %+v", cfg, err, harness.Defaults())
	}
	// Every flag bound to the Config is documented and parses its own
	// default back.
	c := harness.Defaults()
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	c.Flags(fs)
	fs.VisitAll(func(f *flag.Flag) {
		if f.Usage == "" {
			t.Errorf("--%s has no help", f.Name)
		}
		if err := f.Value.Set(f.DefValue); err != nil {
			t.Errorf("--%s does not read its own default %q back: %v", f.Name, f.DefValue, err)
		}
	})
	if !reflect.DeepEqual(c, harness.Defaults()) {
		t.Errorf("setting each flag to its default changed the Config: %+v", c)
	}
}

func TestNewRefusesConfigurationMistakes(t *testing.T) {
	w := newWorld(t, false)
	for _, tt := range []struct {
		name   string
		mutate func(*harness.Config)
		want   string
	}{
		{"no provider", func(c *harness.Config) { c.Provider = "" }, "needs --provider"},
		{"unknown provider", func(c *harness.Config) { c.Provider = "nope" }, `unknown --provider "nope"`},
		{"missing key", func(c *harness.Config) { c.Provider = "openai" }, "set OPENAI_API_KEY"},
		{"script without file", func(c *harness.Config) { c.Provider = "script" }, "needs --script FILE"},
		{"base url for echo", func(c *harness.Config) { c.BaseURL = "http://x" }, "--base-url is only for"},
		{"no attempts", func(c *harness.Config) { c.MaxAttempts = 0 }, "--max-attempts must be at least 1"},
		{"negative timeout", func(c *harness.Config) { c.ReplyTimeout = -time.Second }, "--reply-timeout must not be negative"},
		{"project is a file", func(c *harness.Config) { c.Project = "/dev/null" }, "is not a directory"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := harness.Defaults()
			cfg.Provider, cfg.Project = "echo", w.project
			tt.mutate(&cfg)
			_, err := harness.New(cfg, harness.Deps{Getenv: w.getenv})
			var ce *harness.ConfigError
			if !errors.As(err, &ce) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v; want a *ConfigError containing %q", err, tt.want)
			}
		})
	}
}

func TestServeSavesAndContinues(t *testing.T) {
	w := newWorld(t, true)
	var out bytes.Buffer
	code, err := w.harness(t, func(c *harness.Config) { c.SessionID = "s-first" }).
		Serve(context.Background(), strings.NewReader(`{"cmd":"user","text":"remember me"}`+"\n"), &out)
	if err != nil || code != 0 {
		t.Fatalf("Serve: %d, %v", code, err)
	}
	if got := types(t, out.Bytes()); got[0] != "hello" || got[len(got)-1] != "done" || !strings.Contains(out.String(), "remember me") {
		t.Fatalf("transcript:\n%s", out.String())
	}
	out.Reset()
	code, err = w.harness(t, func(c *harness.Config) { c.Continue = true }).
		Serve(context.Background(), strings.NewReader(""), &out)
	if err != nil || code != 0 {
		t.Fatalf("Serve --continue: %d, %v", code, err)
	}
	got := types(t, out.Bytes())
	if len(got) != 2 || got[1] != "transcript" || !strings.Contains(out.String(), `"session_id":"s-first"`) || !strings.Contains(out.String(), "remember me") {
		t.Fatalf("continued session:\n%s", out.String())
	}

	other := newWorld(t, true)
	_, err = other.harness(t, func(c *harness.Config) { c.Continue = true }).Serve(context.Background(), strings.NewReader(""), io.Discard)
	if !errors.Is(err, harness.ErrNoPriorSession) {
		t.Fatalf("continue with nothing saved: %v, want ErrNoPriorSession", err)
	}
}

func TestUntrustedProjectRefusesTurns(t *testing.T) {
	w := newWorld(t, false)
	var out bytes.Buffer
	if _, err := w.harness(t, nil).Serve(context.Background(), strings.NewReader(`{"cmd":"user","text":"hi"}`+"\n"), &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), `"stop_reason":"refused"`) {
		t.Errorf("an untrusted project ran a turn:\n%s", out.String())
	}
	_, err := w.harness(t, nil).Prompt(context.Background(), "hi", io.Discard)
	if !errors.Is(err, harness.ErrUntrusted) || !strings.Contains(err.Error(), "openmax trust "+w.project) {
		t.Errorf("Prompt in an untrusted project: %v", err)
	}
}

func TestPromptPrintsTheReply(t *testing.T) {
	w := newWorld(t, true)
	var out bytes.Buffer
	stop, err := w.harness(t, nil).Prompt(context.Background(), "say this", &out)
	if err != nil || stop != "stop" {
		t.Fatalf("Prompt: %q, %v", stop, err)
	}
	if !strings.Contains(out.String(), "say this") || !strings.HasSuffix(out.String(), "\n") {
		t.Errorf("Prompt wrote %q", out.String())
	}
	if _, err := w.harness(t, nil).Prompt(context.Background(), "  ", io.Discard); err == nil {
		t.Error("an empty prompt ran")
	}
}
