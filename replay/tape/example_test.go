package tape_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/openmax/openmax/core/harness"
	"github.com/openmax/openmax/recorder"
	"github.com/openmax/openmax/recorder/cassette"
	"github.com/openmax/openmax/replay/tape"
)

// Record a session of the harness (here with the offline echo provider, in
// a trusted temporary project), then replay it from the cassette alone:
// the replay prints what the live session printed.
func Example() {
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	env := map[string]string{"XDG_CONFIG_HOME": filepath.Join(dir, "config")}
	getenv := func(k string) string { return env[k] }
	if _, err := harness.Trust(dir, getenv); err != nil {
		panic(err)
	}
	cfg := harness.Defaults()
	cfg.Provider, cfg.Project, cfg.SessionID = "echo", dir, "s-example"
	path := filepath.Join(dir, "session.yaml")

	var live strings.Builder
	in := strings.NewReader(`{"cmd":"user","text":"hello"}` + "\n")
	if _, err := tape.Record(context.Background(), in, &live, tape.RecordOptions{
		Config: cfg, Deps: harness.Deps{Getenv: getenv}, Cassette: recorder.Options{Path: path},
	}); err != nil {
		panic(err)
	}

	f, err := cassette.Load(path)
	if err != nil {
		panic(err)
	}
	r, err := tape.Replay(context.Background(), f, tape.ReplayOptions{})
	if err != nil {
		panic(err)
	}
	fmt.Println("commands recorded:", len(f.Session.Commands))
	fmt.Println("replay == live:", string(r.Stdout) == live.String())
	fmt.Println("problems:", r.Problems(false))
	// Output:
	// commands recorded: 1
	// replay == live: true
	// problems: []
}
