package wire

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
)

// lineSplitter splits the checker's input into lines, with the same rules as
// LineReader (a trailing CR is not part of the line, a last line without a
// newline still counts, a line longer than max is reported by size) but
// built for throughput and a small footprint:
//
//   - a line that fits in the read buffer is handed over in place, not
//     copied;
//   - a longer one is gathered in one reused buffer up to inMemory bytes;
//   - past that it goes to a temporary file, up to max, and is read back
//     whole only once its newline showed it is within max. A line past max
//     is read to its end and counted, never held.
//
// So a stream with a 1 GiB line costs about inMemory bytes of memory (plus
// the read buffer), while every line up to max is still checked whole. When
// no temporary file can be made, lines up to max are held in memory, as
// LineReader does.
type lineSplitter struct {
	br       *bufio.Reader
	max      int64 // longest line checked whole
	inMemory int   // longest part of a line held in memory before spilling

	buf   []byte   // reused for lines longer than the read buffer
	spill *os.File // created on the first spilled line, reused, removed by close
	noTmp bool     // creating the spill file failed; hold lines in memory
}

// errLineTooLong is returned by next with the line's size.
var errLineTooLong = errors.New("line too long")

// newLineSplitter splits r into lines. A reader that knows how much it
// holds (a bytes.Reader, a strings.Reader, a bytes.Buffer: a stream
// already in memory) gets a read buffer no larger than that: checking a
// replay's few KiB of output must not allocate the whole read buffer each
// time.
func newLineSplitter(r io.Reader, longest int64, inMemory, readBuf int) *lineSplitter {
	if l, ok := r.(interface{ Len() int }); ok {
		readBuf = min(readBuf, max(l.Len()+1, 4<<10))
	}
	return &lineSplitter{br: bufio.NewReaderSize(r, readBuf), max: longest, inMemory: inMemory}
}

// next returns the next line without its newline or trailing CR. The slice
// is valid until the next call. A line longer than max returns
// errLineTooLong and the line's size; the end of input returns io.EOF.
func (r *lineSplitter) next() (line []byte, size int64, err error) {
	chunk, err := r.br.ReadSlice('\n')
	if err == nil || (errors.Is(err, io.EOF) && len(chunk) > 0) {
		// The whole line is in the read buffer: check it where it is.
		if err == nil {
			chunk = chunk[:len(chunk)-1]
		}
		if n := len(chunk); n > 0 && chunk[n-1] == '\r' {
			chunk = chunk[:n-1]
		}
		if int64(len(chunk)) > r.max {
			return nil, int64(len(chunk)), errLineTooLong
		}
		return chunk, int64(len(chunk)), nil
	}
	if !errors.Is(err, bufio.ErrBufferFull) {
		return nil, 0, err
	}
	return r.long(chunk)
}

// long gathers a line that did not fit in the read buffer; first is its
// beginning.
func (r *lineSplitter) long(first []byte) ([]byte, int64, error) {
	r.buf = r.buf[:0]
	var size int64
	spilling, dropped := false, false
	var last byte
	chunk, err := first, bufio.ErrBufferFull
	for {
		complete := err == nil
		if complete {
			chunk = chunk[:len(chunk)-1]
		}
		size += int64(len(chunk))
		if len(chunk) > 0 {
			last = chunk[len(chunk)-1]
		}
		if !dropped {
			// Hold one byte past max: it may be the CR of a CRLF ending.
			switch {
			case size > r.max+1:
				dropped, r.buf = true, r.buf[:0]
			case !spilling && len(r.buf)+len(chunk) > r.inMemory && r.startSpill():
				spilling = true
				fallthrough
			case spilling:
				if len(r.buf) > 0 {
					if _, werr := r.spill.Write(r.buf); werr != nil {
						return nil, 0, fmt.Errorf("spill a long line: %w", werr)
					}
					r.buf = r.buf[:0]
				}
				if _, werr := r.spill.Write(chunk); werr != nil {
					return nil, 0, fmt.Errorf("spill a long line: %w", werr)
				}
			default:
				r.buf = grow(r.buf, len(chunk), int(r.max)+1)
				r.buf = append(r.buf, chunk...)
			}
		}
		switch {
		case complete:
		case errors.Is(err, bufio.ErrBufferFull):
			chunk, err = r.br.ReadSlice('\n')
			continue
		case errors.Is(err, io.EOF):
			// An unterminated last line (size > 0: it began in first).
		default:
			return nil, 0, err
		}
		if last == '\r' {
			size--
		}
		if dropped || size > r.max {
			return nil, size, errLineTooLong
		}
		if !spilling {
			return r.buf[:size], size, nil
		}
		line := make([]byte, size)
		if _, rerr := r.spill.ReadAt(line, 0); rerr != nil {
			return nil, 0, fmt.Errorf("read back a long line: %w", rerr)
		}
		if terr := r.resetSpill(); terr != nil {
			return nil, 0, terr
		}
		return line, size, nil
	}
}

// startSpill makes sure the spill file exists and is empty; false means
// there is none and the line stays in memory.
func (r *lineSplitter) startSpill() bool {
	if r.noTmp {
		return false
	}
	if r.spill == nil {
		f, err := os.CreateTemp("", "openmax-check-*")
		if err != nil {
			r.noTmp = true
			return false
		}
		r.spill = f
		return true
	}
	return r.resetSpill() == nil
}

func (r *lineSplitter) resetSpill() error {
	if err := r.spill.Truncate(0); err != nil {
		return fmt.Errorf("spill file: %w", err)
	}
	if _, err := r.spill.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("spill file: %w", err)
	}
	return nil
}

// close removes the spill file, if one was made.
func (r *lineSplitter) close() {
	if r.spill != nil {
		name := r.spill.Name()
		_ = r.spill.Close()
		_ = os.Remove(name)
		r.spill = nil
	}
}
