// Package childtime times a child process from exec to its first useful
// stdout line: the start-up measurements of bench/probe and
// bench/codexlatency.
package childtime

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"time"
)

// Spawn is one child to time.
type Spawn struct {
	Argv  []string
	Dir   string
	Env   []string
	Stdin string                 // written once the child has started
	Skip  func(line []byte) bool // lines to pass over before the one timed
}

// FirstLine execs s and returns the time until its first stdout line that
// s does not skip, which check must accept; then it closes stdin (EOF ends
// every child timed here) and reaps the child.
func FirstLine(s Spawn, check func([]byte) error) (time.Duration, error) {
	cmd := exec.Command(s.Argv[0], s.Argv[1:]...)
	cmd.Dir, cmd.Env = s.Dir, s.Env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return 0, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return 0, err
	}
	br := bufio.NewReader(stdout)
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	if s.Stdin != "" {
		io.WriteString(stdin, s.Stdin)
	}
	var line []byte
	for {
		line, err = br.ReadBytes('\n')
		if err != nil || s.Skip == nil || !s.Skip(line) {
			break
		}
	}
	d := time.Since(start)
	stdin.Close()
	_, _ = io.Copy(io.Discard, br)
	werr := cmd.Wait()
	if err != nil {
		return 0, fmt.Errorf("reading the first line: %w (stderr: %s)", err, strings.TrimSpace(stderr.String()))
	}
	if err := check(line); err != nil {
		return 0, err
	}
	if werr != nil {
		return 0, fmt.Errorf("exit: %w (stderr: %s)", werr, strings.TrimSpace(stderr.String()))
	}
	return d, nil
}
