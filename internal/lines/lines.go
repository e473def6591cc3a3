// Package lines frames a byte stream into bounded newline-terminated
// lines: the one line reader of every line protocol openmax speaks (the
// openmax wire on stdin, JSON-RPC over stdio through internal/jsonrpc,
// recorded transcripts).
package lines

import (
	"bufio"
	"errors"
	"fmt"
	"io"
)

// TooLongError reports a line that was skipped for exceeding the cap.
// Size is how many bytes it had (without the newline), Max the cap. A
// reader that cuts early (NewEarlyReader) reports the line before its end:
// Cut is then true and Size is what had been read of it.
type TooLongError struct {
	Size, Max int64
	Cut       bool
}

func (e *TooLongError) Error() string {
	if e.Cut {
		return fmt.Sprintf("line is longer than the %d-byte limit (%d bytes read); skipped", e.Max, e.Size)
	}
	return fmt.Sprintf("line is %d bytes, longer than the %d-byte limit; skipped", e.Size, e.Max)
}

// Reader splits a stream into newline-terminated lines without ever
// holding more than max bytes of one line: a longer line is consumed and
// dropped up to its newline, and reported as a *TooLongError. A final
// line without a newline is still a line. It is not safe for concurrent use.
type Reader struct {
	br  *bufio.Reader
	max int

	early    bool // report a long line as soon as it passes the cap
	skipping bool // early: the rest of a line already reported is dropped first
}

// NewReader reads lines of at most max bytes from r.
func NewReader(r io.Reader, max int) *Reader {
	return &Reader{br: bufio.NewReaderSize(r, 64<<10), max: max}
}

// NewEarlyReader is NewReader for a peer that may never end a line: a
// line is reported too long as soon as it has passed the cap, not at its
// newline, and the next call drops the rest of it before reading on.
func NewEarlyReader(r io.Reader, max int) *Reader {
	lr := NewReader(r, max)
	lr.early = true
	return lr
}

// Next returns the next line without its newline (and without a trailing
// carriage return, which does not count toward the cap). The slice is
// freshly allocated. At the end of input it returns io.EOF; a read failure
// is returned as is.
func (lr *Reader) Next() ([]byte, error) {
	if lr.skipping {
		if err := lr.skip(); err != nil {
			return nil, err
		}
	}
	var line []byte
	var size int64
	var last byte // the line's last byte so far
	tooLong := false
	// Hold one byte past the cap: it may be the CR of a CRLF ending.
	hold := lr.max + 1
	for {
		chunk, err := lr.br.ReadSlice('\n')
		complete := err == nil
		if complete {
			chunk = chunk[:len(chunk)-1]
		}
		size += int64(len(chunk))
		if len(chunk) > 0 {
			last = chunk[len(chunk)-1]
		}
		if !tooLong {
			if size > int64(hold) {
				tooLong, line = true, nil
			} else {
				line = Grow(line, len(chunk), hold)
				line = append(line, chunk...)
			}
		}
		switch {
		case complete:
		case errors.Is(err, bufio.ErrBufferFull):
			if tooLong && lr.early {
				lr.skipping = true
				return nil, &TooLongError{Size: size, Max: int64(lr.max), Cut: true}
			}
			continue
		case errors.Is(err, io.EOF) && size > 0:
			// An unterminated last line.
		default:
			return nil, err
		}
		if size > 0 && last == '\r' {
			size--
			if !tooLong {
				line = line[:len(line)-1]
			}
		}
		if tooLong || size > int64(lr.max) {
			return nil, &TooLongError{Size: size, Max: int64(lr.max)}
		}
		if line == nil {
			line = []byte{}
		}
		return line, nil
	}
}

// skip drops the rest of a line reported early, up to its newline.
func (lr *Reader) skip() error {
	for {
		_, err := lr.br.ReadSlice('\n')
		if err == nil {
			lr.skipping = false
			return nil
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return err
		}
	}
}

// Grow makes room for n more bytes, doubling the capacity but never past
// max, so reading a line allocates at most about twice the cap in total
// (append's gentler growth for large slices would allocate several times it).
func Grow(b []byte, n, max int) []byte {
	need := len(b) + n
	if need <= cap(b) {
		return b
	}
	c := 2 * cap(b)
	if c < need {
		c = need
	}
	if c > max {
		c = max
	}
	nb := make([]byte, len(b), c)
	copy(nb, b)
	return nb
}
