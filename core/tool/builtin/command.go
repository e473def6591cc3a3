package builtin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/openmax/openmax/core/tool"
	"github.com/openmax/openmax/internal/procgroup"
	"github.com/openmax/openmax/provider"
	"github.com/openmax/openmax/provider/clock"
)

// pipeDrainWait is how long run_command waits, once the command has exited
// and its process group been killed, for its output pipe to close (a
// process that left the group may still hold it).
const pipeDrainWait = procgroup.DrainWait

type runCommand struct{ p *project }

// Mutating reports true: a command can change anything.
func (runCommand) Mutating() bool { return true }

func (t runCommand) Spec() provider.ToolSpec {
	maxMS := t.p.maxTimeout.Milliseconds()
	return provider.ToolSpec{
		Name: "run_command",
		Description: "Run a program in the project directory and return its combined stdout and stderr, then its exit status as \"[exit code: N]\". " +
			"argv is the program and its arguments, run directly: there is no shell, so no pipes, redirection, globbing, variables or && " +
			"(run [\"sh\", \"-c\", \"...\"] if you need them). stdin is empty. The command is killed, with every process it started, " +
			"when it times out (default " + strconv.FormatInt(t.p.timeout.Milliseconds(), 10) + " ms) or the turn is cancelled. " +
			"It gets a minimal environment, not the user's.",
		Schema: json.RawMessage(`{
  "type": "object",
  "properties": {
    "argv": {"type": "array", "items": {"type": "string"}, "minItems": 1, "description": "The program (looked up in PATH unless it contains a slash) and its arguments."},
    "cwd": {"type": "string", "description": "The working directory, relative to the project root. Default: the project root."},
    "timeout_ms": {"type": "integer", "minimum": 1, "maximum": ` + strconv.FormatInt(maxMS, 10) + `, "description": "Kill the command after this many milliseconds."}
  },
  "required": ["argv"],
  "additionalProperties": false
}`),
	}
}

type commandArgs struct {
	Argv      []string `json:"argv"`
	Cwd       string   `json:"cwd"`
	TimeoutMS *int64   `json:"timeout_ms"`
}

func (t runCommand) Run(ctx context.Context, raw json.RawMessage) tool.Result {
	var a commandArgs
	if err := decodeArgs(raw, &a); err != nil {
		return tool.Failed("%v", err)
	}
	if len(a.Argv) == 0 {
		return missing("argv")
	}
	if a.Argv[0] == "" {
		return tool.Failed("argument \"argv\": the program name (argv[0]) is empty")
	}
	timeout := t.p.timeout
	if a.TimeoutMS != nil {
		if *a.TimeoutMS < 1 {
			return tool.Failed("argument \"timeout_ms\" must be at least 1, not %d", *a.TimeoutMS)
		}
		timeout = min(time.Duration(*a.TimeoutMS)*time.Millisecond, t.p.maxTimeout)
	}
	cwd := a.Cwd
	if cwd == "" {
		cwd = "."
	}
	rel, err := t.p.resolve(cwd)
	if err != nil {
		return tool.Failed("%v", err)
	}
	dir := filepath.Join(t.p.root, rel)
	if st, err := os.Stat(dir); err != nil {
		return tool.Failed("argument \"cwd\": %v", fileError(cwd, err))
	} else if !st.IsDir() {
		return tool.Failed("argument \"cwd\": %s is not a directory", cwd)
	}
	prog, err := lookPath(a.Argv[0], dir, t.p.env)
	if err != nil {
		return tool.Failed("%v", err)
	}
	if ctx.Err() != nil {
		return tool.Failed("cancelled")
	}

	cmd := &exec.Cmd{
		Path: prog,
		Args: a.Argv,
		Dir:  dir,
		Env:  WithAgentMarker(withPWD(t.p.env, dir)),
	}
	// The command leads a process group of its own, killed with
	// everything in it at a timeout, a cancel, and once the command
	// exited; on Linux the kernel kills the command itself when openmax
	// dies (what it started is then orphaned, not killed).
	out := &procgroup.Capture{Max: t.p.cap}
	run, err := procgroup.Run(ctx, cmd, out, procgroup.Options{Timeout: timeout, Sleep: clock.Sleeper(t.p.clock)})
	if err != nil {
		return tool.Failed("cannot run %s: %v", a.Argv[0], unwrapPath(err))
	}
	err = run.Err
	var killed string
	switch run.Ending {
	case procgroup.TimedOut:
		killed = "timed out after " + timeout.String()
	case procgroup.Cancelled:
		killed = "cancelled"
	}

	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		return tool.Failed("running %s: %v", a.Argv[0], err)
	}
	var sb strings.Builder
	sb.WriteString(captured(out))
	if sb.Len() > 0 && !strings.HasSuffix(sb.String(), "\n") {
		sb.WriteByte('\n')
	}
	ps := cmd.ProcessState
	ok := false
	switch {
	case killed != "":
		sb.WriteString("[killed: " + killed + "]")
	case ps.ExitCode() >= 0:
		sb.WriteString("[exit code: " + strconv.Itoa(ps.ExitCode()) + "]")
		ok = ps.Success()
	default:
		sb.WriteString("[exit: " + ps.String() + "]")
	}
	return tool.Result{OK: ok, Output: text(sb.String())}
}

// AgentSpawnedEnv is the environment variable openmax sets to 1 in every
// process its tools start. A process that finds it knows an agent started
// it: an `openmax --stdio` started that way refuses approval_mode, so a
// model cannot lift its own approval gate (docs/policy.md).
const AgentSpawnedEnv = "OPENMAX_AGENT_SPAWNED"

// WithAgentMarker returns env with AgentSpawnedEnv=1 as its last entry,
// whatever env says of it (a configured value cannot switch it off).
func WithAgentMarker(env []string) []string {
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if !strings.HasPrefix(kv, AgentSpawnedEnv+"=") {
			out = append(out, kv)
		}
	}
	return append(out, AgentSpawnedEnv+"=1")
}

// withPWD adds PWD=dir to env unless env sets PWD: shells and programs
// read it for the working directory.
func withPWD(env []string, dir string) []string {
	for _, kv := range env {
		if strings.HasPrefix(kv, "PWD=") {
			return env
		}
	}
	return append(env[:len(env):len(env)], "PWD="+dir)
}

// lookPath finds the program name: a name with a slash is a path relative
// to the working directory dir; another is searched in the PATH of env (not
// this process's), skipping relative PATH entries.
func lookPath(name, dir string, env []string) (string, error) {
	if strings.ContainsRune(name, '/') || strings.ContainsRune(name, filepath.Separator) {
		if !filepath.IsAbs(name) {
			name = filepath.Join(dir, name)
		}
		return name, nil
	}
	p, path := procgroup.SearchPath(name, env)
	if p != "" {
		return p, nil
	}
	return "", fmt.Errorf("command not found: %s (looked in PATH=%s)", name, path)
}

// captured is the output kept, with the cut note when that is not all.
func captured(c *procgroup.Capture) string {
	s, total := string(c.Kept()), c.Total()
	if total <= len(s) {
		return s
	}
	s = trimPartialRune(s)
	shown := len(s)
	if s != "" && !strings.HasSuffix(s, "\n") {
		s += "\n"
	}
	return s + cutNote(total, shown)
}

// trimPartialRune drops a UTF-8 sequence cut off at the end of s.
func trimPartialRune(s string) string {
	for i := len(s) - 1; i >= 0 && i >= len(s)-utf8.UTFMax; i-- {
		if utf8.RuneStart(s[i]) {
			if !utf8.FullRuneInString(s[i:]) {
				return s[:i]
			}
			break
		}
	}
	return s
}
