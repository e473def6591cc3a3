package view

import (
	"errors"
	"io"
	"strconv"
	"strings"

	"github.com/openmax/openmax/core/wire"
)

// command is one line the client sent on stdin.
type command struct {
	n    int    // its line number, counting from 1 as openmax does
	name string // the cmd value when it named a known command, else ""
	text string // a user command's text
	raw  string
}

// prompts follows the client's stdin alongside the transcript, reading it
// only as far as the transcript needs: up to the next user command when a
// turn opens, up to line N when a protocol_error names "line N:". openmax
// handles stdin in order, so admitted user commands open turns in stdin
// order, skipping those a protocol_error refused.
type prompts struct {
	lr      *wire.LineReader
	n       int
	done    bool
	err     error
	pending []command // read, not yet matched to a turn or a protocol_error
}

func newPrompts(r io.Reader) *prompts {
	if r == nil {
		return nil
	}
	return &prompts{lr: wire.NewLineReader(r, wire.MaxLine)}
}

// read reads one more stdin line; false at the end of the stream.
func (p *prompts) read() bool {
	if p.done {
		return false
	}
	line, err := p.lr.Next()
	var tooLong *wire.LineTooLongError
	switch {
	case errors.Is(err, io.EOF):
		p.done = true
		return false
	case errors.As(err, &tooLong):
		p.n++
		p.pending = append(p.pending, command{n: p.n, raw: "(a line over the 8 MiB cap)"})
		return true
	case err != nil:
		p.done, p.err = true, err
		return false
	}
	p.n++
	c := command{n: p.n, raw: string(line)}
	cmd, err := wire.DecodeCommand(line)
	var ce *wire.CommandError
	switch {
	case err == nil:
		c.name = cmd.CommandName()
		if u, ok := cmd.(wire.User); ok {
			c.text = u.Text
		}
	case errors.As(err, &ce):
		c.name = ce.Name
	}
	p.pending = append(p.pending, c)
	return true
}

// nextUser returns the user command the turn opening now answers.
func (p *prompts) nextUser() (command, bool) {
	for i := 0; ; i++ {
		for i >= len(p.pending) {
			if !p.read() {
				return command{}, false
			}
		}
		if p.pending[i].name == "user" {
			c := p.pending[i]
			p.pending = p.pending[i+1:]
			return c, true
		}
	}
}

// answered returns the stdin line a protocol_error names, dropping the
// non-user lines before it: they have been handled.
func (p *prompts) answered(n int) (command, bool) {
	for p.n < n && p.read() {
	}
	var found command
	ok := false
	kept := p.pending[:0]
	for _, c := range p.pending {
		switch {
		case c.n == n:
			found, ok = c, true
		case c.n < n && c.name != "user":
		default:
			kept = append(kept, c)
		}
	}
	p.pending = kept
	return found, ok
}

// lineRef parses the "line N: " prefix openmax puts on every protocol_error.
func lineRef(msg string) (int, bool) {
	rest, ok := strings.CutPrefix(msg, "line ")
	if !ok {
		return 0, false
	}
	num, _, ok := strings.Cut(rest, ": ")
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(num)
	return n, err == nil && n > 0
}
