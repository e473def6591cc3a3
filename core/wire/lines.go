package wire

import (
	"bufio"
	"errors"
	"fmt"
	"io"
)

// MaxLine is the longest stdin line accepted, not counting its newline.
const MaxLine = 8 << 20

// LineTooLongError reports a line that was skipped for exceeding the cap.
// Size is how many bytes it had (without the newline).
type LineTooLongError struct{ Size int64 }

func (e *LineTooLongError) Error() string {
	return fmt.Sprintf("line is %d bytes, longer than the %d-byte (8 MiB) limit; skipped", e.Size, MaxLine)
}

// LineReader splits a stream into newline-terminated lines without ever
// holding more than max bytes of one line: a longer line is consumed and
// dropped up to its newline, and reported as a *LineTooLongError. A final
// line without a newline is still a line. It is not safe for concurrent use.
type LineReader struct {
	br  *bufio.Reader
	max int
}

// NewLineReader reads lines of at most max bytes from r.
func NewLineReader(r io.Reader, max int) *LineReader {
	return &LineReader{br: bufio.NewReaderSize(r, 64<<10), max: max}
}

// Next returns the next line without its newline (and without a trailing
// carriage return, which does not count toward the cap). The slice is
// freshly allocated. At the end of input it returns io.EOF; a read failure
// is returned as is.
func (lr *LineReader) Next() ([]byte, error) {
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
				line = grow(line, len(chunk), hold)
				line = append(line, chunk...)
			}
		}
		switch {
		case complete:
		case errors.Is(err, bufio.ErrBufferFull):
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
			return nil, &LineTooLongError{Size: size}
		}
		if line == nil {
			line = []byte{}
		}
		return line, nil
	}
}

// IsBlank reports whether line holds nothing but JSON whitespace (space,
// tab, CR, LF): such a line is skipped. Other whitespace (vertical tab, form
// feed, NBSP, U+2028, U+3000, ...) is not JSON whitespace, so a line of it
// is a bad line, not a blank one.
func IsBlank(line []byte) bool {
	for _, b := range line {
		switch b {
		case ' ', '\t', '\r', '\n':
		default:
			return false
		}
	}
	return true
}

// grow makes room for n more bytes, doubling the capacity but never past
// max, so reading a line allocates at most about twice the cap in total
// (append's gentler growth for large slices would allocate several times it).
func grow(b []byte, n, max int) []byte {
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
