package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"sync"
)

// clientInput is what the checker knows of the commands the client sent,
// when it is given them: which stdin lines were user commands and where the
// first quit was.
//
// By default answers are matched to commands by the spec's rules alone:
// every user command gets exactly one done, except one sent in flight,
// which gets a protocol_error alone; so the dones number at most the user
// commands, and the shortfall is at most the protocol_errors not followed
// by done refused. With Strict, openmax's own prefix on each protocol_error
// ("line N: ...") names the stdin line it answers, and matching is exact.
type clientInput struct {
	users map[int]bool
	quit  int // line of the first quit; 0 when the input ends without one

	refusals    map[int]bool // user lines answered by a protocol_error
	refusedDone map[int]bool // ... followed by done refused
	lastPE      int          // stdin line of the previous protocol_error, if it was the previous line
	afterQuit   []int        // output lines answering stdin lines after the quit
	lastDone    int          // output line of the last done
	dones       int          // dones of admitted turns

	allDones int // every done, refused ones included
	pes      int // every protocol_error
	refused  int // done refused lines (each follows a protocol_error)
}

var lineRef = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^line (\d+): `) })

// AnswersLine reports the stdin line a whole protocol_error line of
// openmax output answers; ok is false for any other line.
func AnswersLine(line []byte) (n int, ok bool) {
	if !bytes.Contains(line, []byte(`"protocol_error"`)) {
		return 0, false
	}
	var pe struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	}
	if json.Unmarshal(line, &pe) != nil || pe.Type != "protocol_error" {
		return 0, false
	}
	n, ok = AnsweredLine(pe.Message)
	return n, ok && n > 0
}

// AnsweredLine is the stdin line (numbered from 1, one per newline) a
// protocol_error message answers, from its "line N: " prefix; ok is false
// for a message without one.
func AnsweredLine(message string) (n int, ok bool) {
	sub := lineRef().FindStringSubmatch(message)
	if sub == nil {
		return 0, false
	}
	n, err := strconv.Atoi(sub[1])
	return n, err == nil
}

// SetInput gives the checker the client's stdin (the commands it sent), so
// it can also check that every user command got exactly one done, or a
// protocol_error alone when it was sent while a turn was in flight, and that
// nothing answering a line after quit follows the final done. Lines are
// numbered the way openmax reads them: one per newline.
func (c *Checker) SetInput(stdin []byte) {
	in := &clientInput{users: map[int]bool{}, refusals: map[int]bool{}, refusedDone: map[int]bool{}}
	lines := bytes.Split(stdin, []byte("\n"))
	if len(lines) > 0 && len(lines[len(lines)-1]) == 0 {
		lines = lines[:len(lines)-1]
	}
	for i, l := range lines {
		n := i + 1
		cmd, err := DecodeCommand(bytes.TrimSuffix(l, []byte("\r")))
		switch {
		case err == nil && cmd.CommandName() == "user":
			in.users[n] = true
		case err == nil && cmd.CommandName() == "quit" && in.quit == 0:
			in.quit = n
		case err != nil:
			if ce, ok := err.(*CommandError); ok && ce.Name == "user" {
				in.users[n] = true
			}
		}
	}
	c.input = in
}

// observeInput records what the input accounting needs from one legal line.
func (c *Checker) observeInput(typ string, message, stop string) {
	in := c.input
	if in == nil {
		return
	}
	pe := 0
	switch typ {
	case "protocol_error":
		in.pes++
		if n, ok := AnsweredLine(message); ok {
			pe = n
			if in.users[pe] {
				in.refusals[pe] = true
			}
			if in.quit > 0 && pe > in.quit {
				in.afterQuit = append(in.afterQuit, c.n)
			}
		}
	case "done":
		in.lastDone = c.n
		in.allDones++
		if stop == StopRefused {
			in.refused++
			if in.lastPE > 0 {
				in.refusedDone[in.lastPE] = true
			}
		} else {
			in.dones++
		}
	}
	in.lastPE = pe
}

func (c *Checker) endInput() error {
	in := c.input
	if in == nil {
		return nil
	}
	if !c.strict {
		users := 0
		for n := range in.users {
			if in.quit == 0 || n < in.quit {
				users++
			}
		}
		if in.allDones > users {
			return fmt.Errorf("%d done lines answer only %d user commands: every user command is answered by exactly one done", in.allDones, users)
		}
		if alone := in.pes - in.refused; users-in.allDones > alone {
			return fmt.Errorf("%d user commands got no done but only %d protocol_errors went out alone: only a user sent in flight gets no done", users-in.allDones, max(alone, 0))
		}
		return nil
	}
	admitted := 0
	for n := range in.users {
		if !in.refusals[n] && (in.quit == 0 || n < in.quit) {
			admitted++
		}
	}
	if admitted != in.dones {
		return fmt.Errorf("%d user commands were admitted (no protocol_error names their line) but %d turns ended with done", admitted, in.dones)
	}
	for _, l := range in.afterQuit {
		if l > in.lastDone {
			return fmt.Errorf("line %d answers a command sent after quit but comes after the final done", l)
		}
	}
	return nil
}
