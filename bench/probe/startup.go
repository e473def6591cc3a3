package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/openmax/openmax/bench/internal/benchcli"
	"github.com/openmax/openmax/bench/internal/childtime"
)

// startup measures what a user waits for when a client starts openmax:
// exec → hello, with no --session-id (so every run makes and saves a new
// session, as a user's does), beside the process floor (BIN --version: exec,
// Go runtime start, one line out) and, when given, codex app-server's exec →
// initialize response. The kinds are interleaved round by round (each round
// starting with the next kind), so load from other work on the machine falls
// on all of them alike, and the cost over the floor is the median of the
// per-round differences.
//
// Kinds:
//
//	floor     BIN --version
//	fresh     BIN --stdio --provider echo, a new empty state directory each run
//	          (a user's first session on a machine)
//	existing  the same with one state directory kept across runs (a user's
//	          every-day start: the project's folder and index exist, and the
//	          sessions pile up, one a run)
//	unsaved   the same with no state directory (no HOME, no XDG_STATE_HOME):
//	          the session is kept in memory, so this is the start without the
//	          session store
//	codex     CODEX app-server -c check_for_update_on_startup=false: exec →
//	          the response to initialize (only with -codex)
func startup(args []string) error {
	fs := flag.NewFlagSet("startup", flag.ExitOnError)
	n := fs.Int("n", 50, "rounds to time (after one untimed warm-up round)")
	scratch := fs.String("dir", "", "scratch directory for the project, config and state directories (required)")
	codex := fs.String("codex", "", "a codex binary to time beside openmax (optional)")
	argv, err := benchcli.Command(fs, args)
	if err != nil {
		return err
	}
	if *scratch == "" {
		return errors.New("-dir is required")
	}
	bin := argv[0]
	project := filepath.Join(*scratch, "project")
	config := filepath.Join(*scratch, "config")
	existing := filepath.Join(*scratch, "state-existing")
	codexHome := filepath.Join(*scratch, "codex-home")
	for _, d := range []string{project, config, existing, codexHome} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return err
		}
	}
	env := func(state string) []string {
		return append(os.Environ(), "XDG_STATE_HOME="+state, "XDG_CONFIG_HOME="+config)
	}
	type kind struct {
		name string
		run  func(round int) (time.Duration, error)
	}
	kinds := []kind{
		{"floor", func(int) (time.Duration, error) {
			return childtime.FirstLine(childtime.Spawn{Argv: []string{bin, "--version"}, Dir: project, Env: env(existing)}, func(l []byte) error {
				if !bytes.HasPrefix(l, []byte("openmax ")) {
					return fmt.Errorf("--version printed %.80q", l)
				}
				return nil
			})
		}},
		{"fresh", func(round int) (time.Duration, error) {
			state := filepath.Join(*scratch, fmt.Sprintf("state-fresh-%d", round))
			defer os.RemoveAll(state)
			return childtime.FirstLine(childtime.Spawn{Argv: []string{bin, "--stdio", "--provider", "echo"}, Dir: project, Env: env(state)}, isNewHello)
		}},
		{"existing", func(int) (time.Duration, error) {
			return childtime.FirstLine(childtime.Spawn{Argv: []string{bin, "--stdio", "--provider", "echo"}, Dir: project, Env: env(existing)}, isNewHello)
		}},
		{"unsaved", func(int) (time.Duration, error) {
			// No state directory (neither XDG_STATE_HOME nor HOME): the session
			// runs in memory, so this is the harness's start without the store.
			var e []string
			for _, kv := range env(existing) {
				if !strings.HasPrefix(kv, "HOME=") && !strings.HasPrefix(kv, "XDG_STATE_HOME=") {
					e = append(e, kv)
				}
			}
			return childtime.FirstLine(childtime.Spawn{Argv: []string{bin, "--stdio", "--provider", "echo"}, Dir: project, Env: e}, isNewHello)
		}},
	}
	if *codex != "" {
		kinds = append(kinds, kind{"codex", func(int) (time.Duration, error) {
			init := `{"id":0,"method":"initialize","params":{"clientInfo":{"name":"openmax-bench","title":null,"version":"0"},"capabilities":{"experimentalApi":true}}}` + "\n"
			return childtime.FirstLine(childtime.Spawn{
				Argv:  []string{*codex, "app-server", "-c", "check_for_update_on_startup=false"},
				Dir:   project,
				Env:   append(os.Environ(), "CODEX_HOME="+codexHome),
				Stdin: init,
				Skip:  func(l []byte) bool { return !bytes.Contains(l, []byte(`"id":0`)) },
			}, func(l []byte) error {
				if !bytes.Contains(l, []byte(`"result"`)) {
					return fmt.Errorf("initialize answered %.200q", l)
				}
				return nil
			})
		}})
	}

	times := make([][]time.Duration, len(kinds))
	for round := 0; round <= *n; round++ {
		// Each round starts with the next kind, so no kind always follows the
		// same other one (whose exit may leave the disk busy).
		for i := range kinds {
			k := (round + i) % len(kinds)
			kd := kinds[k]
			d, err := kd.run(round)
			if err != nil {
				return fmt.Errorf("%s, round %d: %w", kd.name, round, err)
			}
			if round > 0 { // round 0 warms the page cache
				times[k] = append(times[k], d)
			}
		}
	}
	ms := func(d time.Duration) string { return fmt.Sprintf("%.2f", float64(d.Microseconds())/1000) }
	fmt.Printf("startup_rounds=%d\n", *n)
	for k, kd := range kinds {
		sorted := slices.Clone(times[k])
		slices.Sort(sorted)
		fmt.Printf("%s_median_ms=%s\n", kd.name, ms(percentile(sorted, 50)))
		fmt.Printf("%s_p90_ms=%s\n", kd.name, ms(percentile(sorted, 90)))
		fmt.Printf("%s_min_ms=%s\n", kd.name, ms(sorted[0]))
		if k > 0 {
			diffs := make([]time.Duration, len(times[k]))
			for i := range diffs {
				diffs[i] = times[k][i] - times[0][i]
			}
			slices.Sort(diffs)
			fmt.Printf("%s_over_floor_ms=%s\n", kd.name, ms(percentile(diffs, 50)))
		}
	}
	if sessions, err := filepath.Glob(filepath.Join(existing, "openmax", "projects", "*", "sessions", "*.jsonl")); err == nil {
		fmt.Printf("existing_sessions_after=%d\n", len(sessions))
	}
	return nil
}

// isHello accepts a hello line.
func isHello(line []byte) error {
	if !bytes.HasPrefix(line, []byte(`{"type":"hello"`)) {
		return fmt.Errorf("first line is not hello: %.80q", line)
	}
	return nil
}

// isNewHello accepts the hello of a new session.
func isNewHello(line []byte) error {
	if err := isHello(line); err != nil || !bytes.Contains(line, []byte(`"continued":false`)) {
		return fmt.Errorf("first line is not a new session's hello: %.120q", line)
	}
	return nil
}
