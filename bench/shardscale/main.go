// Command shardscale measures how `openmax replay DIR` scales with the
// library and splits across shards (a manual measurement, not part of CI).
// For each size it generates a library (bench/gen library: the recorded
// library's cassettes round-robin, with their golden files), then replays
// it through the binary whole, and in N shards (--shard K/N) started at
// once, and prints side by side:
//
//   - the whole run's wall time and CPU (user+system of the process), and
//     the CPU per cassette beyond one process start, which should stay
//     flat as the library grows;
//   - the shards' wall time (all at once on this machine), the sum of
//     their CPU and its ratio to the whole run's (the cost of splitting:
//     one more process start per shard), and the largest shard's CPU over
//     the whole run's: the wall a shard takes on a worker of its own,
//     as a fraction of the unsharded run (1/N is the ideal).
//
// It ends with the plan on paper for -plan cassettes on -workers workers,
// from the largest library's CPU per cassette and one process start.
//
// Usage: go run ./bench/shardscale [-sizes 10,100,1000,10000] [-shards 4]
// [-plan 100000] [-workers 50]
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/openmax/openmax/bench/internal/benchcli"
)

func main() {
	sizes := flag.String("sizes", "10,100,1000,10000", "library sizes, comma-separated")
	shards := flag.Int("shards", 4, "shards run at once")
	plan := flag.Int("plan", 100_000, "cassettes of the library planned on paper")
	workers := flag.Int("workers", 50, "workers of the plan")
	flag.Parse()
	if err := run(*sizes, *shards, *plan, *workers); err != nil {
		fmt.Fprintf(os.Stderr, "shardscale: %v\n", err)
		os.Exit(1)
	}
}

// measured is one process's cost.
type measured struct {
	wall, cpu time.Duration
}

func run(sizes string, n, plan, workers int) error {
	tmp, err := os.MkdirTemp("", "shardscale-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	bin, err := benchcli.BuildOpenmax(tmp)
	if err != nil {
		return err
	}
	gen := filepath.Join(tmp, "gen")
	if out, err := exec.Command("go", "build", "-o", gen, "github.com/openmax/openmax/bench/gen").CombinedOutput(); err != nil {
		return fmt.Errorf("go build ./bench/gen: %v\n%s", err, out)
	}
	// One process start with an empty shard: the fixed cost of a shard.
	empty := filepath.Join(tmp, "empty")
	if out, err := exec.Command(gen, "library", "-n", "1", "-out", empty).CombinedOutput(); err != nil {
		return fmt.Errorf("gen: %v\n%s", err, out)
	}
	start, err := replay(bin, filepath.Join(empty, "lib"), "")
	if err != nil {
		return err
	}
	fmt.Printf("one process replaying one cassette: %.1f ms CPU, %.1f ms wall\n\n", ms(start.cpu), ms(start.wall))
	fmt.Printf("%10s  %10s  %10s  %14s  %12s  %12s  %9s  %12s\n", "cassettes", "whole wall", "whole CPU", "CPU/cassette", fmt.Sprintf("%d-shard wall", n), "shards' CPU", "sum/whole", "max/whole")
	var perCassette time.Duration
	for _, size := range benchcli.Ints(sizes) {
		out := filepath.Join(tmp, "lib"+strconv.Itoa(size))
		if b, err := exec.Command(gen, "library", "-n", strconv.Itoa(size), "-out", out).CombinedOutput(); err != nil {
			return fmt.Errorf("gen: %v\n%s", err, b)
		}
		lib := filepath.Join(out, "lib")
		whole, err := replay(bin, lib, "")
		if err != nil {
			return err
		}
		parts := make([]measured, n)
		errs := make([]error, n)
		t0 := time.Now()
		var wg sync.WaitGroup
		for k := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				parts[k], errs[k] = replay(bin, lib, fmt.Sprintf("%d/%d", k+1, n))
			}()
		}
		wg.Wait()
		wall := time.Since(t0)
		var sum, most time.Duration
		for k := range n {
			if errs[k] != nil {
				return errs[k]
			}
			sum += parts[k].cpu
			most = max(most, parts[k].cpu)
		}
		perCassette = max(whole.cpu-start.cpu, 0) / time.Duration(size)
		fmt.Printf("%10d  %9.0fms  %9.0fms  %12.2fms  %10.0fms  %10.0fms  %9.2f  %12.2f\n", size, ms(whole.wall), ms(whole.cpu), ms(perCassette),
			ms(wall), ms(sum), float64(sum)/float64(whole.cpu), float64(most)/float64(whole.cpu))
		os.RemoveAll(out)
	}
	each := (plan + workers - 1) / workers
	shardCPU := time.Duration(each)*perCassette + start.cpu
	fmt.Printf("\nplan: %d cassettes on %d workers = %d per shard: about %.1f s of CPU each (%.2f ms per cassette + %.1f ms start), %.0f s of CPU in all\n",
		plan, workers, each, shardCPU.Seconds(), ms(perCassette), ms(start.cpu), (time.Duration(workers) * shardCPU).Seconds())
	return nil
}

// replay runs `openmax replay lib [--shard spec]` and measures it; the run
// must pass.
func replay(bin, lib, spec string) (measured, error) {
	args := []string{"replay", lib}
	if spec != "" {
		args = append(args, "--shard", spec)
	}
	cmd := exec.Command(bin, args...)
	t0 := time.Now()
	out, err := cmd.CombinedOutput()
	wall := time.Since(t0)
	if err != nil {
		return measured{}, fmt.Errorf("openmax %s: %v\n%s", strings.Join(args, " "), err, tail(out))
	}
	return measured{wall: wall, cpu: cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()}, nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func tail(b []byte) string {
	if len(b) > 2000 {
		return "..." + string(b[len(b)-2000:])
	}
	return string(b)
}
