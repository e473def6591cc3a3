package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openmax/openmax/provider/clock"
)

// This file holds the tests docs/conformance.md names for clauses of
// stdio-protocol.md that no other test asserted through the binary's own
// entry point (run).

// TestContinueOwnershipAndReadability: "A continued session must have a
// readable session index and transcript and no other writable owner.
// Failure is reported on stderr with a nonzero exit before the handshake.
// The process retains ownership while waiting for commands, including
// between turns." (stdio-protocol.md, Handshake; HS-11 and HS-13 in
// docs/conformance.md).
func TestContinueOwnershipAndReadability(t *testing.T) {
	state, project := t.TempDir(), t.TempDir()
	e := env{clock: clock.Real{}, getenv: trustedEnv(t, func(k string) string {
		if k == "XDG_STATE_HOME" {
			return state
		}
		return ""
	}, project)}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	args := []string{"--stdio", "--provider", "echo", "--project", project}
	continueOnce := func() (string, string, int) {
		var out, errb bytes.Buffer
		code := run(ctx, append(args, "--continue"), strings.NewReader(""), &out, &errb, e)
		return out.String(), errb.String(), code
	}

	// A live session that has finished a turn and waits for the next
	// command still owns the session.
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	exited := make(chan int, 1)
	go func() {
		exited <- run(ctx, append(args, "--session-id", "s-owner"), inR, outW, io.Discard, e)
		outW.Close()
	}()
	lines := bufio.NewScanner(outR)
	if _, err := inW.Write([]byte(`{"cmd":"user","text":"first turn"}` + "\n")); err != nil {
		t.Fatal(err)
	}
	sawDone := false
	for lines.Scan() {
		if strings.Contains(lines.Text(), `"type":"done"`) {
			sawDone = true
			break
		}
	}
	if !sawDone {
		t.Fatal("the owner's turn printed no done")
	}
	if out, stderr, code := continueOnce(); code == 0 || out != "" || !strings.Contains(stderr, "owned") {
		t.Errorf("--continue between the owner's turns: exit %d, stdout %q, stderr %q; want a nonzero exit, no stdout, and why on stderr", code, out, stderr)
	}
	inW.Close()
	go func() { _, _ = io.Copy(io.Discard, outR) }()
	if code := <-exited; code != 0 {
		t.Fatalf("owner exit %d", code)
	}

	// Once the owner is gone, --continue resumes it.
	if out, stderr, code := continueOnce(); code != 0 || !strings.Contains(out, `"continued":true`) {
		t.Fatalf("--continue after the owner exited: exit %d\n%s%s", code, out, stderr)
	}

	index, transcript := sessionFiles(t, state)
	// The index is index.json, the durable one, and index.next.json beside
	// it, which names the latest session first when it is whole: both are
	// made unreadable.
	next := filepath.Join(filepath.Dir(index), "index.next.json")
	good, err := os.ReadFile(index)
	if err != nil {
		t.Fatal(err)
	}
	goodNext, err := os.ReadFile(next)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		breakIt func() error
		fix     func() error
		names   string // what stderr must name
	}{
		{"unreadable index",
			func() error {
				return errors.Join(os.WriteFile(index, []byte("{latest"), 0o600), os.WriteFile(next, []byte("{latest"), 0o600))
			},
			func() error {
				return errors.Join(os.WriteFile(index, good, 0o600), os.WriteFile(next, goodNext, 0o600))
			},
			index},
		{"unreadable transcript",
			func() error {
				if err := os.Rename(transcript, transcript+".away"); err != nil {
					return err
				}
				return os.Mkdir(transcript, 0o700)
			},
			func() error {
				if err := os.Remove(transcript); err != nil {
					return err
				}
				return os.Rename(transcript+".away", transcript)
			},
			transcript},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.breakIt(); err != nil {
				t.Fatal(err)
			}
			out, stderr, code := continueOnce()
			if code == 0 || out != "" || !strings.Contains(stderr, tt.names) {
				t.Errorf("exit %d, stdout %q, stderr %q; want a nonzero exit before any handshake and stderr naming %s", code, out, stderr, tt.names)
			}
			if err := tt.fix(); err != nil {
				t.Fatal(err)
			}
		})
	}
	// The failures left the session as it was.
	if out, stderr, code := continueOnce(); code != 0 || !strings.Contains(out, "first turn") {
		t.Errorf("--continue after the repairs: exit %d\n%s%s", code, out, stderr)
	}
}

// sessionFiles finds the one session index and the one transcript file
// under a state directory.
func sessionFiles(t *testing.T, state string) (index, transcript string) {
	t.Helper()
	err := filepath.WalkDir(state, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		switch {
		case d.Name() == "index.json":
			index = path
		case strings.Contains(d.Name(), "s-owner"):
			transcript = path
		}
		return nil
	})
	if err != nil || index == "" || transcript == "" {
		var all []string
		_ = filepath.WalkDir(state, func(path string, _ fs.DirEntry, _ error) error { all = append(all, path); return nil })
		t.Fatalf("index %q, transcript %q (%v) under:\n%s", index, transcript, err, strings.Join(all, "\n"))
	}
	return index, transcript
}
