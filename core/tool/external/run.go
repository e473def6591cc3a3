package external

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/openmax/openmax/core/tool"
	"github.com/openmax/openmax/internal/procgroup"
	"github.com/openmax/openmax/provider/clock"
)

// Run runs one call: the tool's program with the call's arguments (a JSON
// object) on its stdin, in the project directory, with the manifest's
// environment. Its stdout and stderr, together and capped, are the result;
// a nonzero exit fails the call. The process group is killed when the call
// times out, when ctx ends, and when the program exits (whatever it left
// running goes too), so the call never outlives its timeout.
func (t *Tool) Run(ctx context.Context, args json.RawMessage) tool.Result {
	return t.run(ctx, args, false)
}

// RunApproved is Run, refusing the call unless the manifest as loaded and
// the code, hashed again just before the program starts, are approved: a
// file swapped while its approval was pending does not run.
func (t *Tool) RunApproved(ctx context.Context, args json.RawMessage) tool.Result {
	return t.run(ctx, args, true)
}

func (t *Tool) run(ctx context.Context, args json.RawMessage, approvedOnly bool) tool.Result {
	code, err := resolve(t.project, t.code)
	if err != nil {
		return tool.Failed("cannot run %s: code %s: %v", t.m.Name, t.code, err)
	}
	if err := checkCode(t.project, t.code); err != nil {
		// Swapped in since the load: a directory would run as nothing
		// and report success, a FIFO would hold the interpreter.
		return tool.Failed("cannot run %s: %v", t.m.Name, err)
	}
	if approvedOnly {
		path, sum, err := t.UnapprovedSource()
		if err != nil {
			return tool.Failed("not run: %v", err)
		}
		if path != "" {
			return tool.Failed("not run: %s changed after it was approved (its bytes are now sha %s, which no human approved)", path, sum[:12])
		}
	}
	env := t.environ()
	argv := append(append(append([]string(nil), t.m.Interpreter...), code), t.m.Args...)
	prog := code
	if len(t.m.Interpreter) > 0 {
		if prog, err = lookPath(t.m.Interpreter[0], env); err != nil {
			return tool.Failed("cannot run %s: %v", t.m.Name, err)
		}
	}
	if ctx.Err() != nil {
		return tool.Failed("cancelled")
	}
	cmd := &exec.Cmd{
		Path: prog, Args: argv, Dir: t.project, Env: env,
		Stdin: bytes.NewReader(args),
	}
	// The tool leads a process group of its own, killed at the timeout (on
	// the injected clock), at a cancel and once it exited; on Linux the
	// kernel kills it when openmax dies.
	out := &procgroup.Capture{Max: OutputCap}
	run, err := procgroup.Run(ctx, cmd, out, procgroup.Options{Timeout: t.timeout, Sleep: clock.Sleeper(t.opts.Clock)})
	if err != nil {
		return tool.Failed("cannot run %s: %v", t.m.Name, err)
	}
	err = run.Err
	var killed string
	switch run.Ending {
	case procgroup.TimedOut:
		killed = "timed out after " + t.timeout.String()
	case procgroup.Cancelled:
		killed = "cancelled"
	}

	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		return tool.Failed("running %s: %v", t.m.Name, err)
	}
	text := captured(out)
	ps := cmd.ProcessState
	switch {
	case killed != "":
		return tool.Result{Output: withNote(text, "[killed: "+killed+"]")}
	case ps.Success():
		return tool.Result{OK: true, Output: text}
	case ps.ExitCode() >= 0:
		return tool.Result{Output: withNote(text, "[exit code: "+strconv.Itoa(ps.ExitCode())+"]")}
	default:
		return tool.Result{Output: withNote(text, "[exit: "+ps.String()+"]")}
	}
}

func withNote(text, note string) string {
	if text != "" && !strings.HasSuffix(text, "\n") {
		text += "\n"
	}
	return text + note
}

// lookPath finds an interpreter: an absolute path as is, a name in env's
// PATH (absolute directories only).
func lookPath(name string, env []string) (string, error) {
	if filepath.IsAbs(name) {
		return name, nil
	}
	p, path := procgroup.SearchPath(name, env)
	if p != "" {
		return p, nil
	}
	return "", fmt.Errorf("interpreter not found: %s (looked in PATH=%s)", name, path)
}

// captured is the output kept, valid UTF-8, with a note when some was
// cut.
func captured(c *procgroup.Capture) string {
	kept, total := c.Kept(), c.Total()
	s := strings.ToValidUTF8(string(kept), "\uFFFD")
	if total > len(kept) {
		for len(kept) > 0 && !utf8.Valid(kept) {
			kept = kept[:len(kept)-1]
		}
		s = withNote(string(kept), fmt.Sprintf("[output cut: %d bytes, showing the first %d]", total, len(kept)))
	}
	return s
}
