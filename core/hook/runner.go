package hook

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/openmax/openmax/core/tool/builtin"
	"github.com/openmax/openmax/internal/procgroup"
)

// Message is one AHP message for one hook.
type Message struct {
	// ID is the JSON-RPC id of an intercept request; 0 for an observe
	// notification.
	ID int64
	// Line is the message as sent, without its newline.
	Line []byte
}

// Reply is what came of a Message.
type Reply struct {
	// Response is the hook's response line to an intercept (nil for a
	// notification, or when none came).
	Response []byte
	// Failure says why the exchange failed operationally ("" when it did
	// not). It may hold text the hook wrote; the Set redacts env values.
	Failure string
}

// Exchanger delivers messages to hooks. The default runs the hooks'
// processes; a replay substitutes one that answers from a recording.
type Exchanger interface {
	Exchange(ctx context.Context, h *Hook, m Message) Reply
	Close() error
}

// MaxMalformed is how many malformed lines a persistent hook process may
// write before it is terminated (a line over MaxLine counts as all of
// them); the hook is then not started again for the rest of the session.
const MaxMalformed = 3

// stderrTail is how much of a hook's stderr is kept for a failure detail.
const stderrTail = 8 << 10

// Processes is the Exchanger that runs hook processes.
type Processes struct {
	base []string // the base environment (BaseEnv)

	mu       sync.Mutex
	backends map[*Hook]*backend
	closed   bool
}

// NewProcesses runs hooks with the base environment taken from environ
// (openmax's environment, e.g. os.Environ()) by BaseEnv.
func NewProcesses(environ []string) *Processes {
	return &Processes{base: BaseEnv(environ), backends: map[*Hook]*backend{}}
}

// Exchange runs m through h's process.
func (p *Processes) Exchange(ctx context.Context, h *Hook, m Message) Reply {
	if h.Lifecycle == Persistent {
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return Reply{Failure: "the hooks are closed"}
		}
		b := p.backends[h]
		if b == nil {
			b = &backend{h: h, env: p.env(h)}
			p.backends[h] = b
		}
		p.mu.Unlock()
		return b.exchange(ctx, m)
	}
	return perEvent(ctx, h, p.env(h), m)
}

// env is h's environment: the base, its env entries, and the marker that
// tells an openmax it starts that it runs under an agent's session (so it
// cannot change the approval mode; docs/policy.md).
func (p *Processes) env(h *Hook) []string {
	return builtin.WithAgentMarker(hookEnv(p.base, h.Env))
}

// Close terminates every persistent hook process.
func (p *Processes) Close() error {
	p.mu.Lock()
	p.closed = true
	bs := p.backends
	p.backends = map[*Hook]*backend{}
	p.mu.Unlock()
	for _, b := range bs {
		b.close()
	}
	return nil
}

// proc is one running hook process.
type proc struct {
	cmd     *exec.Cmd
	stdin   *os.File // our end
	stdout  *os.File // our end
	stderr  *tail
	errR    *os.File      // our end of its stderr
	errDone chan struct{} // stderr drained
	killed  sync.Once
}

// start starts h's command with env, in its own process group, with pipes
// of our own on its three streams (so waiting for it never waits for a
// grandchild that kept one open).
func start(h *Hook, env []string) (*proc, error) {
	path, err := lookPath(h.Command, env)
	if err != nil {
		return nil, err
	}
	var closers []*os.File
	closeAll := func() {
		for _, f := range closers {
			f.Close()
		}
	}
	pipe := func() (r, w *os.File, err error) {
		r, w, err = os.Pipe()
		if err == nil {
			closers = append(closers, r, w)
		}
		return r, w, err
	}
	inR, inW, err := pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := pipe()
	if err != nil {
		closeAll()
		return nil, err
	}
	errR, errW, err := pipe()
	if err != nil {
		closeAll()
		return nil, err
	}
	cmd := &exec.Cmd{
		Path:   path,
		Args:   append([]string{h.Command}, h.Args...),
		Env:    env,
		Dir:    h.Dir,
		Stdin:  inR,
		Stdout: outW,
		Stderr: errW,
	}
	procgroup.Setup(cmd, false)
	if err := cmd.Start(); err != nil {
		closeAll()
		return nil, err
	}
	inR.Close()
	outW.Close()
	errW.Close()
	p := &proc{cmd: cmd, stdin: inW, stdout: outR, stderr: &tail{max: stderrTail}, errR: errR, errDone: make(chan struct{})}
	go func() {
		defer close(p.errDone)
		defer errR.Close()
		_, _ = io.Copy(p.stderr, errR)
	}()
	return p, nil
}

// exitGrace is how long, once a hook process has exited and its group been
// killed, its output is waited for before our ends of its pipes are closed
// (a process that left the group may hold them open).
const exitGrace = time.Second

// reap follows the exit of the process: its group is killed, so whatever
// it left running (a background child holding its stdout) goes too and
// cannot hold its exchange open, and its stdout reader (readerDone) and
// stderr are given up to exitGrace, together, to reach their end; then our
// ends are closed.
func (p *proc) reap(readerDone <-chan struct{}) {
	procgroup.Kill(p.cmd.Process)
	expired := make(chan struct{})
	t := time.AfterFunc(exitGrace, func() { close(expired) })
	defer t.Stop()
	select {
	case <-readerDone:
	case <-expired:
		p.kill()
		<-readerDone
	}
	select {
	case <-p.errDone:
	case <-expired:
		p.errR.Close()
		<-p.errDone
	}
}

// kill kills the process group and closes our ends of the pipes, which
// unblocks every read and write of ours.
func (p *proc) kill() {
	p.killed.Do(func() {
		procgroup.Kill(p.cmd.Process)
		p.stdin.Close()
		p.stdout.Close()
	})
}

// diagnostics is the stderr the hook wrote after mark, for a failure
// detail.
func (p *proc) diagnostics(mark int64) string {
	if s := p.stderr.since(mark); s != "" {
		return "; stderr: " + s
	}
	return ""
}

// status describes how a finished process ended.
func status(err error) string {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ee.Exited() {
			return fmt.Sprintf("exited with status %d", ee.ExitCode())
		}
		return "was killed (" + ee.String() + ")"
	}
	return err.Error()
}

// deadlineFailure says why ctx ended: the hook's timeout or a cancel.
func deadlineFailure(ctx context.Context, h *Hook) string {
	if errors.Is(context.Cause(ctx), errTimeout) {
		return fmt.Sprintf("timed out after %v; its process group was killed", h.Timeout)
	}
	return "cancelled; its process group was killed"
}

var errTimeout = errors.New("hook timeout")

// perEvent runs one process for m: m then EOF on stdin, at most one
// response line read, then the exit status. The exchange is over when the
// process has exited: a background child it left holding its stdout does
// not keep it open (reap kills it), so the answer of a hook that answered
// and exited 0 decides at once.
func perEvent(ctx context.Context, h *Hook, env []string, m Message) Reply {
	ctx, cancel := context.WithTimeoutCause(ctx, h.Timeout, errTimeout)
	defer cancel()
	p, err := start(h, env)
	if err != nil {
		return Reply{Failure: "could not start: " + err.Error()}
	}
	stop := context.AfterFunc(ctx, p.kill)
	defer stop()
	go func() {
		// A hook that exits without reading makes this fail; its status
		// and its output say what happened.
		_, _ = p.stdin.Write(append(m.Line[:len(m.Line):len(m.Line)], '\n'))
		p.stdin.Close()
	}()
	var resp []byte
	var problems []string
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		resp, problems = readReply(p, m)
	}()
	// Our own pipes: Wait waits for the process, not for what holds them.
	werr := p.cmd.Wait()
	killed := !stop() // the timeout or a cancel ended it
	p.reap(readerDone)
	switch {
	case killed:
		problems = append([]string{deadlineFailure(ctx, h)}, problems...)
		resp = nil
	case werr != nil:
		problems = append(problems, status(werr))
	case m.ID != 0 && resp == nil && len(problems) == 0:
		problems = append(problems, "exited without a response")
	}
	if len(problems) > 0 {
		return Reply{Failure: strings.Join(problems, "; ") + p.diagnostics(0)}
	}
	return Reply{Response: resp}
}

// readReply reads a per-event process's stdout to its end: the response
// line to an intercept, and what is wrong with the output. A line over
// MaxLine, or a second line for a request, kills the process.
func readReply(p *proc, m Message) (resp []byte, problems []string) {
	lr := newLineReader(p.stdout, MaxLine)
	for {
		line, err := lr.next()
		if err != nil {
			if errors.Is(err, errLineTooLong) {
				problems = append(problems, err.Error())
				p.kill()
			}
			break
		}
		if m.ID == 0 {
			// A notification gets no response; a line that is not a
			// JSON-RPC object is still malformed output.
			if _, _, err := parseResponse(line); err != nil && len(problems) == 0 {
				problems = append(problems, err.Error())
			}
			continue
		}
		if resp != nil {
			problems = append(problems, "malformed output: more than one line written for one request")
			p.kill()
			break
		}
		resp = line
	}
	return resp, problems
}

// backend is a persistent hook: one process at a time, started on first
// use and again on the use after it died, serving one exchange at a time.
type backend struct {
	h   *Hook
	env []string

	call sync.Mutex // held for a whole exchange: one outstanding intercept

	mu       sync.Mutex
	cur      *instance
	disabled string   // why the hook is not started again
	pending  []string // problems noticed between exchanges
}

// instance is one process of a backend and its stdout reader.
type instance struct {
	p         *proc
	awaiting  int64       // the id of the outstanding intercept (under backend.mu)
	responses chan []byte // the awaited response
	malformed int         // malformed lines so far (under backend.mu)
	done      chan struct{}
	waitErr   error // set before done closes
	dead      bool  // under backend.mu: gone or being killed
}

func (b *backend) exchange(ctx context.Context, m Message) Reply {
	b.call.Lock()
	defer b.call.Unlock()
	ctx, cancel := context.WithTimeoutCause(ctx, b.h.Timeout, errTimeout)
	defer cancel()
	in, problems := b.instance()
	if in == nil {
		return Reply{Failure: strings.Join(problems, "; ")}
	}
	mark := in.p.stderr.mark()
	if m.ID != 0 {
		b.mu.Lock()
		in.awaiting = m.ID
		b.mu.Unlock()
	}
	written := make(chan error, 1)
	go func() {
		_, err := in.p.stdin.Write(append(m.Line[:len(m.Line):len(m.Line)], '\n'))
		written <- err
	}()
	var resp []byte
	var fail string
	if m.ID == 0 {
		select {
		case err := <-written:
			if err != nil {
				fail = "could not deliver the notification: " + b.ended(ctx, in)
			}
		case <-ctx.Done():
			fail = deadlineFailure(ctx, b.h)
			b.kill(in)
		}
	} else {
		select {
		case resp = <-in.responses:
			// The request must be wholly written before the next one can
			// be: a hook that answers without reading it all is waited for.
			select {
			case <-written:
			case <-ctx.Done():
				fail = deadlineFailure(ctx, b.h)
				b.kill(in)
			}
		case <-in.done:
			select {
			case resp = <-in.responses:
			default:
				fail = "no response: " + b.ended(ctx, in)
			}
		case <-ctx.Done():
			fail = deadlineFailure(ctx, b.h)
			b.kill(in)
		}
		b.mu.Lock()
		in.awaiting = 0
		b.mu.Unlock()
	}
	b.mu.Lock()
	problems = append(problems, b.pending...)
	b.pending = nil
	b.mu.Unlock()
	if fail != "" {
		problems = append(problems, fail+in.p.diagnostics(mark))
		resp = nil
	}
	return Reply{Response: resp, Failure: strings.Join(problems, "; ")}
}

// ended describes how an instance ended, waiting for its exit; when ctx
// ends first (a hook that closed its stdin and lives on), it is killed.
func (b *backend) ended(ctx context.Context, in *instance) string {
	select {
	case <-in.done:
	case <-ctx.Done():
		b.kill(in)
	}
	return "the process " + describe(in.waitErr)
}

// describe is how a process ended, given what Wait returned.
func describe(err error) string {
	if err == nil {
		return "exited with status 0"
	}
	return status(err)
}

// instance returns the running process, starting one when there is none
// (the first use, or the use after a crash), with the problems noticed
// since the last exchange.
func (b *backend) instance() (*instance, []string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	problems := b.pending
	b.pending = nil
	if b.disabled != "" {
		return nil, append(problems, b.disabled)
	}
	if b.cur != nil && !b.cur.dead {
		return b.cur, problems
	}
	p, err := start(b.h, b.env)
	if err != nil {
		return nil, append(problems, "could not start: "+err.Error())
	}
	in := &instance{p: p, responses: make(chan []byte, 1), done: make(chan struct{})}
	b.cur = in
	readerDone := make(chan struct{})
	go b.read(in, readerDone)
	go func() {
		err := p.cmd.Wait()
		p.reap(readerDone)
		b.mu.Lock()
		if !in.dead && in.awaiting == 0 {
			// Not ended by openmax and not during an intercept (which
			// reports it): a crash between messages, told at the next use.
			b.pending = append(b.pending, "the process "+describe(err)+" after its last message; it is started again on the next"+p.diagnostics(0))
		}
		in.dead = true
		b.mu.Unlock()
		in.waitErr = err
		close(in.done)
	}()
	return in, problems
}

// read reads an instance's stdout until EOF: the awaited response goes to
// the exchange; anything else is malformed output, and MaxMalformed
// malformed lines terminate the process for good.
func (b *backend) read(in *instance, done chan struct{}) {
	defer close(done)
	lr := newLineReader(in.p.stdout, MaxLine)
	for {
		line, err := lr.next()
		if err != nil && !errors.Is(err, errLineTooLong) {
			return
		}
		if err == nil {
			var id int64
			id, _, err = parseResponse(line)
			if err == nil {
				b.mu.Lock()
				if id == in.awaiting {
					in.awaiting = 0
					b.mu.Unlock()
					in.responses <- line
					continue
				}
				b.mu.Unlock()
				err = fmt.Errorf("%w: a response to no outstanding request (id %d)", errMalformed, id)
			}
		}
		b.mu.Lock()
		b.pending = append(b.pending, err.Error())
		in.malformed++
		if errors.Is(err, errLineTooLong) {
			// Reading on would spend without end on a hook that may
			// never write a newline.
			in.malformed = max(in.malformed, MaxMalformed)
		}
		terminate := in.malformed >= MaxMalformed && !in.dead
		if terminate {
			b.disabled = fmt.Sprintf("not run: its process was terminated after %d malformed output lines", in.malformed)
			b.pending = append(b.pending, fmt.Sprintf("terminated after %d malformed output lines; it is not started again this session", in.malformed))
			in.dead = true
		}
		b.mu.Unlock()
		if terminate {
			in.p.kill()
			return
		}
	}
}

// kill ends an instance (a timeout or a cancel); the next use starts a new
// one.
func (b *backend) kill(in *instance) {
	b.mu.Lock()
	in.dead = true
	b.mu.Unlock()
	in.p.kill()
	<-in.done
}

// closeGrace is how long Close lets a persistent hook exit on EOF before
// its group is killed.
const closeGrace = 2 * time.Second

// close ends the running instance, if any: EOF on its stdin, so it can
// finish what it read and exit, then its group is killed.
func (b *backend) close() {
	b.mu.Lock()
	in := b.cur
	b.cur = nil
	if in != nil {
		in.dead = true
	}
	b.mu.Unlock()
	if in == nil {
		return
	}
	in.p.stdin.Close()
	grace := time.NewTimer(min(closeGrace, b.h.Timeout))
	defer grace.Stop()
	select {
	case <-in.done:
	case <-grace.C:
	}
	b.kill(in)
}
