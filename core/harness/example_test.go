package harness_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/openmax/openmax/core/harness"
)

// A program drives the harness it builds exactly as a client drives the
// binary: commands in, protocol lines out. Here the echo provider answers,
// in a trusted project whose settings and sessions live in a temporary
// directory.
func Example() {
	root, _ := os.MkdirTemp("", "openmax-example")
	defer os.RemoveAll(root)
	env := map[string]string{"XDG_CONFIG_HOME": filepath.Join(root, "config"), "XDG_STATE_HOME": filepath.Join(root, "state")}
	getenv := func(k string) string { return env[k] }
	if _, err := harness.Trust(root, getenv); err != nil {
		fmt.Println(err)
		return
	}

	cfg := harness.Defaults()
	cfg.Provider, cfg.Project, cfg.SessionID = "echo", root, "s-example"
	h, err := harness.New(cfg, harness.Deps{Getenv: getenv})
	if err != nil {
		fmt.Println(err)
		return
	}
	in := strings.NewReader(`{"cmd":"user","text":"hello"}` + "\n")
	var out strings.Builder
	code, err := h.Serve(context.Background(), in, &out)
	if err != nil {
		fmt.Println(err)
		return
	}
	sc := bufio.NewScanner(strings.NewReader(out.String()))
	for sc.Scan() {
		var line struct {
			Type, Text string
			Stop       string `json:"stop_reason"`
		}
		_ = json.Unmarshal(sc.Bytes(), &line)
		fmt.Println(strings.TrimSpace(line.Type + " " + line.Text + line.Stop))
	}
	fmt.Println("exit", code)
	// Output:
	// hello
	// budget
	// token hello
	// message_done hello
	// done stop
	// exit 0
}
