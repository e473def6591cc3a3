// Command probe times a running openmax for bench/run.sh, a manual
// measurement script (never run in CI). It talks to the child over pipes
// only.
//
//	probe hello  [-n 50] -- BIN ARGS...   exec BIN n times; time exec → first
//	                                      stdout line (must be hello); print
//	                                      median, p90, min, max
//	probe tokens [-o FILE] -- BIN ARGS... start BIN, wait for hello, send one
//	                                      user command, count token lines
//	                                      until done; print the rate
//	probe startup -dir D [-n 50] [-codex C] -- BIN
//	                                      exec → hello of new sessions (fresh and
//	                                      existing state dirs) beside BIN --version
//	                                      and codex app-server, interleaved
//	probe rss -- BIN ARGS...              run BIN with this stdin/stdout and
//	                                      print its peak RSS from rusage (the
//	                                      fallback when /usr/bin/time is absent)
//
// Results go to stdout as key=value lines for the script to pick up.
package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"syscall"
	"time"

	"github.com/openmax/openmax/bench/internal/benchcli"
	"github.com/openmax/openmax/bench/internal/childtime"
)

func main() {
	benchcli.Main("probe", "probe hello [-n N] -- BIN ARGS... | probe tokens [-o FILE] -- BIN ARGS... | probe startup -dir D [-n N] [-codex C] -- BIN | probe rss -- BIN ARGS...", map[string]func([]string) error{"hello": hello, "tokens": tokens, "rss": rss, "startup": startup})
}

func hello(args []string) error {
	fs := flag.NewFlagSet("hello", flag.ExitOnError)
	n := fs.Int("n", 50, "runs to time (after one untimed warm-up run)")
	argv, err := benchcli.Command(fs, args)
	if err != nil {
		return err
	}
	var times []time.Duration
	for i := 0; i <= *n; i++ {
		d, err := childtime.FirstLine(childtime.Spawn{Argv: argv}, isHello)
		if err != nil {
			return fmt.Errorf("run %d: %w", i, err)
		}
		if i > 0 { // run 0 warms the page cache
			times = append(times, d)
		}
	}
	slices.Sort(times)
	ms := func(d time.Duration) string { return fmt.Sprintf("%.2f", float64(d.Microseconds())/1000) }
	fmt.Printf("hello_runs=%d\n", len(times))
	fmt.Printf("hello_median_ms=%s\n", ms(percentile(times, 50)))
	fmt.Printf("hello_p90_ms=%s\n", ms(percentile(times, 90)))
	fmt.Printf("hello_min_ms=%s\n", ms(times[0]))
	fmt.Printf("hello_max_ms=%s\n", ms(times[len(times)-1]))
	return nil
}

// percentile is the nearest-rank percentile of sorted durations.
func percentile(sorted []time.Duration, p int) time.Duration {
	rank := (p*len(sorted) + 99) / 100 // ceil(p/100 * n)
	if rank < 1 {
		rank = 1
	}
	return sorted[rank-1]
}

// lineType returns the type of an openmax stdout line cheaply: events start
// with session_id and then type, other lines with type, and session ids hold
// no quotes, so the first "type" key is the line's.
func lineType(line []byte) string {
	const key = `"type":"`
	i := bytes.Index(line, []byte(key))
	if i < 0 {
		return ""
	}
	rest := line[i+len(key):]
	j := bytes.IndexByte(rest, '"')
	if j < 0 {
		return ""
	}
	return string(rest[:j])
}

func tokens(args []string) error {
	fs := flag.NewFlagSet("tokens", flag.ExitOnError)
	out := fs.String("o", "", "also write every stdout line of the child to this file")
	text := fs.String("text", "go", "the user command's text")
	argv, err := benchcli.Command(fs, args)
	if err != nil {
		return err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	var tee *bufio.Writer
	if *out != "" {
		f, err := os.Create(*out)
		if err != nil {
			return err
		}
		defer f.Close()
		tee = bufio.NewWriterSize(f, 1<<20)
		defer tee.Flush()
	}
	br := bufio.NewReaderSize(stdout, 1<<20)
	next := func() ([]byte, error) {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			// A line over 1 MiB: keep the whole of it.
			whole := append([]byte(nil), line...)
			for errors.Is(err, bufio.ErrBufferFull) {
				line, err = br.ReadSlice('\n')
				whole = append(whole, line...)
			}
			line = whole
		}
		if tee != nil && len(line) > 0 {
			tee.Write(line)
		}
		return line, err
	}

	start := time.Now()
	if err := cmd.Start(); err != nil {
		return err
	}
	first, err := next()
	if err != nil || lineType(first) != "hello" {
		return fmt.Errorf("no hello (got %.80q, %v)", first, err)
	}
	helloAt := time.Since(start)

	userCmd := fmt.Sprintf(`{"cmd":"user","text":%q}`+"\n", *text)
	sent := time.Now()
	if _, err := io.WriteString(stdin, userCmd); err != nil {
		return err
	}
	var nTokens, nLines, nBytes int
	var firstToken time.Duration
	var doneLine []byte
	for {
		line, err := next()
		if err != nil {
			return fmt.Errorf("stream ended before done after %d tokens: %v", nTokens, err)
		}
		nLines++
		nBytes += len(line)
		switch lineType(line) {
		case "token":
			if nTokens == 0 {
				firstToken = time.Since(sent)
			}
			nTokens++
		case "done":
			doneLine = append([]byte(nil), line...)
		}
		if doneLine != nil {
			break
		}
	}
	elapsed := time.Since(sent)

	io.WriteString(stdin, `{"cmd":"quit"}`+"\n")
	stdin.Close()
	for {
		if _, err := next(); err != nil {
			break
		}
	}
	if err := cmd.Wait(); err != nil {
		return fmt.Errorf("exit: %w", err)
	}
	fmt.Printf("startup_to_hello_ms=%.1f\n", float64(helloAt.Microseconds())/1000)
	fmt.Printf("first_token_ms=%.2f\n", float64(firstToken.Microseconds())/1000)
	fmt.Printf("user_to_done_ms=%.1f\n", float64(elapsed.Microseconds())/1000)
	fmt.Printf("tokens=%d\n", nTokens)
	fmt.Printf("turn_lines=%d\n", nLines)
	fmt.Printf("turn_bytes=%d\n", nBytes)
	fmt.Printf("tokens_per_s=%.0f\n", float64(nTokens)/elapsed.Seconds())
	fmt.Printf("done=%s", doneLine)
	return nil
}

func rss(args []string) error {
	fs := flag.NewFlagSet("rss", flag.ExitOnError)
	argv, err := benchcli.Command(fs, args)
	if err != nil {
		return err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	start := time.Now()
	runErr := cmd.Run()
	wall := time.Since(start)
	if cmd.ProcessState == nil {
		return runErr
	}
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		return errors.New("no rusage on this platform")
	}
	// Maxrss is in kilobytes on Linux. Report on stderr: stdout is the child's.
	fmt.Fprintf(os.Stderr, "Maximum resident set size (kbytes): %d\n", ru.Maxrss)
	fmt.Fprintf(os.Stderr, "Elapsed (wall clock) time (seconds): %.2f\n", wall.Seconds())
	fmt.Fprintf(os.Stderr, "Exit status: %d\n", cmd.ProcessState.ExitCode())
	os.Exit(cmd.ProcessState.ExitCode())
	return nil
}
