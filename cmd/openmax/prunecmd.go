package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	"github.com/openmax/openmax/internal/atomicfile"
	"github.com/openmax/openmax/provider/clock"
	"github.com/openmax/openmax/recorder/cassette"
	"github.com/openmax/openmax/recorder/replay"
	"github.com/openmax/openmax/replay/tape"
)

var pruneCommand = command{name: "openmax cassette prune", usage: "CASSETTE|DIR [--check] [--ignore PATH] [--no-default-ignores]",
	purpose: "Replay each cassette's recorded session and remove the interactions the replay never used, reporting each (index, method, URL, why);\nthe cassette is rewritten atomically in place, its other interactions byte for byte. --check only reports, exit 1 if any would go (for CI).\nA recording without a session of its own (a proxy's, another tool's) is refused, or skipped in a directory."}

// runPruneCmd is `openmax cassette prune` as the binary runs it: SIGINT
// and SIGTERM stop it.
func runPruneCmd(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return runPrune(ctx, args, stdout, stderr, env{clock: clock.Real{}})
}

// runPrune is `openmax cassette prune CASSETTE|DIR`. For each cassette it
// runs the replay of its recorded session (as openmax replay does) to
// learn which interactions the session uses; the rest are reported on
// stdout, one line each, and removed: the file is replaced atomically
// with the interactions kept, each byte for byte as it was, and the
// session. A cassette whose replay does not reproduce the recording
// otherwise (a request missed, a command refused) is left alone and is a
// failure: what its replay did not use says nothing then. The result is
// replayed again before it is written, and must use every interaction.
// Exit 0 when all went well (with --check: nothing would go), 1 when a
// cassette failed (with --check: something would go), 2 on a usage error.
func runPrune(ctx context.Context, args []string, stdout, stderr io.Writer, e env) int {
	c := pruneCommand
	fs := c.flags()
	check := fs.Bool("check", false, "only report what would go; exit 1 if anything would (nothing is written)")
	match := addMatchFlags(fs) // the same matching as openmax replay
	pos, code, ok := c.parse(fs, args, stdout, stderr)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		return c.usageError(stderr, "want one cassette or directory, got %d arguments", len(pos))
	}
	paths := []string{pos[0]}
	if fi, err := os.Stat(pos[0]); err != nil {
		fmt.Fprintf(stderr, "openmax cassette prune: %v\n", err)
		return 1
	} else if fi.IsDir() {
		paths, _ = filepath.Glob(filepath.Join(pos[0], "*.yaml"))
		sort.Strings(paths)
		if len(paths) == 0 {
			fmt.Fprintf(stderr, "openmax cassette prune: no cassettes (*.yaml) in %s\n", pos[0])
			return 1
		}
	}
	failed, would := false, false
	for _, p := range paths {
		gone, err := prune(ctx, p, *check, match, stdout, stderr, e)
		if len(paths) > 1 && (errors.Is(err, errMadeUp) || errors.Is(err, tape.ErrNoSession)) {
			fmt.Fprintf(stderr, "openmax cassette prune: %s: skipped: %v\n", p, err)
			continue
		}
		if err != nil {
			fmt.Fprintf(stderr, "openmax cassette prune: %s: %v\n", p, err)
			failed = true
			continue
		}
		would = would || gone > 0
	}
	if failed || (*check && would) {
		return 1
	}
	return 0
}

// errMadeUp refuses to prune a recording whose session openmax made up.
var errMadeUp = errors.New("its session is made up (an imported recording): its replay cannot tell what the client that made it used (serve it to that client with openmax fake-provider --cassette: the summary names what was never requested)")

// errNotClean is a replay that did not reproduce its recording.
var errNotClean = errors.New("its replay does not reproduce the recording, so what it leaves unused says nothing; nothing was removed")

// prune prunes one cassette (or, with check, reports what would go) and
// returns how many interactions go.
func prune(ctx context.Context, path string, check bool, match *matchFlags, stdout, stderr io.Writer, e env) (int, error) {
	f, items, err := loadItems(path, "openmax cassette prune", stderr)
	if err != nil {
		return 0, err
	}
	if f.Session != nil && f.Session.Imported {
		return 0, errMadeUp
	}
	r, err := pruneReplay(ctx, f, match, e)
	if errors.Is(err, tape.ErrNoSession) {
		return 0, fmt.Errorf("%w: prune learns what is used by replaying the session (a vcr.New cassette is pruned by its own test, run with OPENMAX_PRUNE=1)", err)
	}
	if err != nil {
		return 0, err
	}
	if problems := r.Problems(true); len(problems) > 0 {
		return 0, fmt.Errorf("%w:\n  %s", errNotClean, strings.Join(problems, "\n  "))
	}
	unused := r.Unused
	if len(unused) == 0 {
		fmt.Fprintf(stdout, "%s: all %d interaction(s) used; nothing to prune\n", path, len(f.Interactions))
		return 0, nil
	}
	verb := "removed"
	if check {
		verb = "would remove"
	}
	gone := map[int]bool{}
	for _, i := range unused {
		gone[i] = true
	}
	for _, i := range unused {
		it := f.Interactions[i]
		fmt.Fprintf(stdout, "%s: %s interaction %d: %s %s: %s\n", path, verb, i, it.Request.Method, it.Request.URL, whyUnused(i, gone, len(f.Interactions), r))
	}
	if check {
		return len(unused), nil
	}
	kept := cassette.New()
	kept.Session = f.Session
	var texts [][]byte
	for i, it := range items {
		if !gone[i] {
			texts = append(texts, it.Text)
			kept.Interactions = append(kept.Interactions, it.Interaction)
		}
	}
	// The result must replay clean, every interaction used, before it
	// replaces the cassette.
	again, err := pruneReplay(ctx, kept, match, e)
	if err == nil {
		if problems := again.Problems(false); len(problems) > 0 {
			err = fmt.Errorf("the pruned cassette does not replay clean (%s); nothing was removed", strings.Join(problems, "; "))
		}
	}
	if err != nil {
		return 0, err
	}
	data, err := cassette.PlainText(texts, f.Session)
	if err != nil {
		return 0, err
	}
	perm := os.FileMode(0o600)
	if fi, err := os.Stat(path); err == nil {
		perm = fi.Mode().Perm()
	}
	if err := atomicfile.Write(path, data, perm); err != nil {
		return 0, err
	}
	fmt.Fprintf(stdout, "%s: kept %d interaction(s), removed %d\n", path, len(texts), len(unused))
	return len(unused), nil
}

// pruneReplay replays f's session as openmax replay does, instantly.
func pruneReplay(ctx context.Context, f *cassette.File, match *matchFlags, e env) (tape.Result, error) {
	opts := replay.Options{Clock: e.clock}
	match.apply(&opts)
	return tape.Replay(ctx, f, tape.ReplayOptions{Serving: opts})
}

// whyUnused says where unused interaction i sits among the used ones.
func whyUnused(i int, gone map[int]bool, n int, r tape.Result) string {
	before, after := -1, -1
	for j := i - 1; j >= 0; j-- {
		if !gone[j] {
			before = j
			break
		}
	}
	for j := i + 1; j < n; j++ {
		if !gone[j] {
			after = j
			break
		}
	}
	served := n - len(gone)
	switch {
	case served == 0:
		return "never requested: the session's replay asks for none of the interactions"
	case after < 0:
		return fmt.Sprintf("never requested: recorded after the last interaction the session uses (%d), a leftover of an earlier run", before)
	case before < 0:
		return fmt.Sprintf("never requested: recorded before the first interaction the session uses (%d)", after)
	}
	return fmt.Sprintf("never requested: the session goes from interaction %d to %d without it (a request that changed since it was recorded?)", before, after)
}
