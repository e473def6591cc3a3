// Command loadscale measures loading large recorded cassettes the way
// every command loads them (a manual measurement, not part of CI), with
// stock go-vcr v2 beside it in the same interleaved run.
//
// For each size it writes a recording (gen.go: many streamed Chat
// Completions interactions with their chunks and timings, and two huge
// streamed replies) in the recorder's layout, checks that stock go-vcr
// loads it, and then times, in separate child processes so that each
// peak RSS is the loader's own:
//
//   - the openmax binary: `openmax fake-provider --cassette FILE`, from
//     exec until it prints its base URL (the cassette is loaded, checked
//     and served by then), peak RSS read from its /proc entry at that
//     moment;
//   - importer.LoadNotes, the function every command (replay, cassette
//     show, inject, sweep, fake-provider --cassette) loads through, in a
//     child of this program;
//   - stock go-vcr v2.1.0's cassette.Load, in a child of this program.
//
// The median of -runs interleaved runs is printed, with the peak RSS as a
// multiple of the file's size and go-vcr's load time over ours.
//
// Usage: go run ./bench/loadscale [-mb 50,100,200,400] [-runs 3] [-dir /tmp] [-openmax BIN]
// The files are written under -dir and removed afterwards. Without
// -openmax, the binary is built from ./cmd/openmax first.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/openmax/openmax/bench/internal/benchcli"
	"github.com/openmax/openmax/bench/internal/loadchild"
	"github.com/openmax/openmax/bench/internal/procmem"
)

func main() {
	mbs := flag.String("mb", "50,100,200,400", "recording sizes, MB (10^6 bytes)")
	runs := flag.Int("runs", 3, "interleaved runs per size (the median is printed)")
	dir := flag.String("dir", os.TempDir(), "where to write the recordings (removed afterwards)")
	bin := flag.String("openmax", "", "the openmax binary (default: built from ./cmd/openmax)")
	child := flag.String("child", "", "(child) load the file given with this loader: openmax, go-vcr or none")
	flag.Parse()
	var err error
	if *child != "" {
		err = loadchild.Load(*child, flag.Arg(0))
	} else {
		err = run(benchcli.Ints(*mbs), *runs, *dir, *bin)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "loadscale:", err)
		os.Exit(1)
	}
}

// sample is one measured load.
type sample struct {
	d   time.Duration
	rss int64
	n   int // interactions loaded (children)
}

func medians(ss []sample) (time.Duration, int64) {
	ds, rs := make([]time.Duration, len(ss)), make([]int64, len(ss))
	for i, s := range ss {
		ds[i], rs[i] = s.d, s.rss
	}
	slices.Sort(ds)
	slices.Sort(rs)
	return ds[len(ds)/2], rs[len(rs)/2]
}

func run(mbs []int, runs int, dir, bin string) error {
	work, err := os.MkdirTemp(dir, "loadscale")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	if bin == "" {
		if bin, err = benchcli.BuildOpenmax(work); err != nil {
			return err
		}
	}
	base, err := child("none", "-")
	if err != nil {
		return err
	}
	fmt.Printf("loading a recorded cassette: median of %d interleaved runs, each loader in a child process (%d CPUs; a child that loads nothing peaks at %.1f MiB)\n",
		runs, runtime.NumCPU(), mib(base.rss))
	fmt.Printf("  %-8s %6s | %-26s | %-26s | %-26s | %s\n", "file", "inter.", "openmax fake-provider", "importer.LoadNotes", "go-vcr v2 cassette.Load", "go-vcr time /")
	fmt.Printf("  %-8s %6s | %8s %9s %7s | %8s %9s %7s | %8s %9s %7s | %s\n", "", "", "to URL", "peak RSS", "x file", "load", "peak RSS", "x file", "load", "peak RSS", "x file", "openmax (library)")
	for _, mb := range mbs {
		size := int64(mb) * 1e6
		// go-vcr's yaml.v3 decode peaks at over 5 times the file: leave room.
		if avail, err := procmem.Available(); err == nil && avail < 7*size {
			fmt.Printf("  %dMB: skipped, %.0f MiB available and go-vcr needs about %.0f MiB\n", mb, mib(avail), mib(6*size))
			continue
		}
		path := filepath.Join(work, fmt.Sprintf("recorded-%dmb.yaml", mb))
		n, err := makeRecording(path, size)
		if err != nil {
			return fmt.Errorf("writing %s: %w", path, err)
		}
		fi, err := os.Stat(path)
		if err != nil {
			return err
		}
		var bins, libs, stocks []sample
		for r := range runs {
			// Rotate who goes first, so none always meets a colder cache.
			all, k := []string{"binary", "openmax", "go-vcr"}, r%3
			order := append(all[k:], all[:k]...)
			for _, who := range order {
				var s sample
				if who == "binary" {
					s, err = binary(bin, path)
				} else {
					s, err = child(who, path)
					if err == nil && s.n != n {
						err = fmt.Errorf("%d interactions loaded, %d written", s.n, n)
					}
				}
				if err != nil {
					os.Remove(path)
					return fmt.Errorf("%s on %s: %w", who, path, err)
				}
				switch who {
				case "binary":
					bins = append(bins, s)
				case "openmax":
					libs = append(libs, s)
				default:
					stocks = append(stocks, s)
				}
			}
		}
		os.Remove(path)
		sz := float64(fi.Size())
		bd, br := medians(bins)
		ld, lr := medians(libs)
		sd, sr := medians(stocks)
		fmt.Printf("  %6.1fMB %6d | %7.2fs %6.0fMiB %6.2fx | %7.2fs %6.0fMiB %6.2fx | %7.2fs %6.0fMiB %6.2fx | %.1fx (%.1fx)\n",
			sz/1e6, n, bd.Seconds(), mib(br), float64(br)/sz, ld.Seconds(), mib(lr), float64(lr)/sz,
			sd.Seconds(), mib(sr), float64(sr)/sz, float64(sd)/float64(bd), float64(sd)/float64(ld))
	}
	return nil
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

// binary runs `openmax fake-provider --cassette path` until it prints its
// base URL, reads its peak RSS, and interrupts it.
func binary(bin, path string) (sample, error) {
	cmd := exec.Command(bin, "fake-provider", "--cassette", path, "--pace", "instant", "--addr", "127.0.0.1:0")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return sample{}, err
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return sample{}, err
	}
	line, rerr := bufio.NewReader(out).ReadString('\n')
	d := time.Since(start)
	rss, merr := procmem.PeakRSS(cmd.Process.Pid)
	cmd.Process.Signal(syscall.SIGINT)
	werr := cmd.Wait()
	switch {
	case rerr != nil || !strings.HasPrefix(line, "http://"):
		return sample{}, fmt.Errorf("no base URL (%q, %v): %s", line, rerr, stderr.String())
	case merr != nil:
		return sample{}, merr
	case werr != nil:
		return sample{}, fmt.Errorf("%w: %s", werr, stderr.String())
	case strings.Contains(stderr.String(), "converted"):
		return sample{}, fmt.Errorf("loaded as another tool's recording: %s", stderr.String())
	}
	return sample{d: d, rss: rss}, nil
}

// child runs this program as a child that loads path with who.
func child(who, path string) (sample, error) {
	r, err := loadchild.Run(os.Args[0], "-child", who, path)
	return sample{d: r.D, rss: r.RSS, n: r.N}, err
}
