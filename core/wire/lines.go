package wire

import (
	"errors"
	"fmt"
	"io"

	"github.com/openmax/openmax/internal/lines"
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
// The framing is internal/lines'; this type names its errors in the wire's
// words.
type LineReader struct{ r *lines.Reader }

// NewLineReader reads lines of at most max bytes from r.
func NewLineReader(r io.Reader, max int) *LineReader {
	return &LineReader{r: lines.NewReader(r, max)}
}

// Next returns the next line without its newline (and without a trailing
// carriage return, which does not count toward the cap). The slice is
// freshly allocated. At the end of input it returns io.EOF; a read failure
// is returned as is.
func (lr *LineReader) Next() ([]byte, error) {
	line, err := lr.r.Next()
	var tooLong *lines.TooLongError
	if errors.As(err, &tooLong) {
		return nil, &LineTooLongError{Size: tooLong.Size}
	}
	return line, err
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

// grow is lines.Grow: room for n more bytes, never past max.
func grow(b []byte, n, max int) []byte { return lines.Grow(b, n, max) }
