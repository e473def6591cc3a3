// Package loadchild is the child process a load bench starts to load one
// cassette, so that the peak RSS it reports is the loader's own: the
// bench re-runs itself in a child mode that calls Load, and reads the
// child's line with Run.
package loadchild

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	vcrcassette "github.com/dnaeon/go-vcr/v2/cassette"

	"github.com/openmax/openmax/bench/internal/procmem"
	"github.com/openmax/openmax/recorder/importer"
)

// Result is what one child measured.
type Result struct {
	D   time.Duration // the load
	RSS int64         // the child's peak RSS, bytes
	N   int           // the interactions loaded
}

// Load loads path with loader and prints the time it took (ns), the
// process's peak RSS (bytes) and the interactions loaded, on one line.
// The loaders: "openmax" (importer.LoadNotes, what every command loads
// through; a recording it had to convert is an error), "go-vcr" (stock
// go-vcr v2's cassette.Load) and "none" (nothing: the baseline).
func Load(loader, path string) error {
	start := time.Now()
	n := 0
	switch loader {
	case "openmax":
		f, converted, _, err := importer.LoadNotes(path)
		if err != nil {
			return err
		}
		if converted != "" {
			return fmt.Errorf("%s was converted from %s: not a recording of ours", path, converted)
		}
		n = len(f.Interactions)
	case "go-vcr":
		c, err := vcrcassette.Load(strings.TrimSuffix(path, ".yaml"))
		if err != nil {
			return err
		}
		n = len(c.Interactions)
	case "none":
		n = 1
	default:
		return fmt.Errorf("unknown loader %q", loader)
	}
	d := time.Since(start)
	if n == 0 {
		return errors.New("no interactions loaded")
	}
	rss, err := procmem.PeakRSS(0)
	if err != nil {
		return err
	}
	fmt.Println(int64(d), rss, n)
	return nil
}

// Run runs argv, a child that calls Load, and reads its line.
func Run(argv ...string) (Result, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stderr = os.Stderr
	cmd.Env = append(os.Environ(), "GOGC=") // each loader with Go's default GC
	out, err := cmd.Output()
	if err != nil {
		return Result{}, fmt.Errorf("%v: %w", argv, err)
	}
	var r Result
	if _, err := fmt.Sscan(string(out), &r.D, &r.RSS, &r.N); err != nil {
		return Result{}, fmt.Errorf("the child printed %q: %w", out, err)
	}
	return r, nil
}
