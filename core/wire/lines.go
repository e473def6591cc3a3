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
// carriage return). The slice is freshly allocated. At the end of input it
// returns io.EOF; a read failure is returned as is.
func (lr *LineReader) Next() ([]byte, error) {
	var line []byte
	var size int64
	tooLong := false
	for {
		chunk, err := lr.br.ReadSlice('\n')
		complete := err == nil
		if complete {
			chunk = chunk[:len(chunk)-1]
		}
		size += int64(len(chunk))
		if !tooLong {
			if size > int64(lr.max) {
				tooLong, line = true, nil
			} else {
				line = grow(line, len(chunk), lr.max)
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
		if tooLong {
			return nil, &LineTooLongError{Size: size}
		}
		if n := len(line); n > 0 && line[n-1] == '\r' {
			line = line[:n-1]
		}
		if line == nil {
			line = []byte{}
		}
		return line, nil
	}
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
