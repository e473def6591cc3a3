package hook

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync"
)

// MaxLine is the longest line read from a hook, without its newline. A
// longer line is malformed output: what was read of it is dropped, so a
// hook writing an endless line costs at most this much memory.
const MaxLine = 1 << 20

// errLineTooLong is a line over MaxLine.
var errLineTooLong = fmt.Errorf("%w: a line longer than %d bytes (1 MiB)", errMalformed, MaxLine)

// lineReader reads bounded lines. It is not safe for concurrent use.
type lineReader struct {
	br       *bufio.Reader
	max      int
	skipping bool // inside a line already reported too long
}

func newLineReader(r io.Reader, max int) *lineReader {
	return &lineReader{br: bufio.NewReaderSize(r, 64<<10), max: max}
}

// next returns the next line without its newline (nor a trailing CR). A
// line over the cap is reported as errLineTooLong as soon as the cap is
// passed; the next call drops the rest of it. A final line without a
// newline is a line; then io.EOF.
func (r *lineReader) next() ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.br.ReadSlice('\n')
		ended := err == nil
		if r.skipping {
			if ended {
				r.skipping = false
			}
			if ended || errors.Is(err, bufio.ErrBufferFull) {
				continue
			}
			return nil, err
		}
		n := len(line) + len(chunk)
		if ended {
			n--
		}
		if n > r.max {
			r.skipping = !ended
			return nil, errLineTooLong
		}
		line = append(line, chunk...)
		switch {
		case ended:
			line = bytes.TrimSuffix(line[:len(line)-1], []byte("\r"))
			if len(line) > r.max {
				return nil, errLineTooLong
			}
			return line, nil
		case errors.Is(err, bufio.ErrBufferFull):
		case errors.Is(err, io.EOF) && len(line) > 0:
			if len(line) > r.max {
				return nil, errLineTooLong
			}
			return line, nil
		default:
			return nil, err
		}
	}
}

// tail keeps the last bytes written to it (a hook's stderr), at most max.
type tail struct {
	mu    sync.Mutex
	max   int
	buf   []byte
	lost  bool
	total int64 // bytes ever written
}

// Write never fails, so a hook's stderr never blocks on openmax.
func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.total += int64(len(p))
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
		t.lost = true
	}
	return len(p), nil
}

// mark is a position in the stream, for since.
func (t *tail) mark() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.total
}

// String is what was kept, marked when the start was dropped.
func (t *tail) String() string { return t.since(0) }

// since is what was kept of the bytes written after mark (a persistent
// hook's diagnostics of one exchange, not of its whole life), marked when
// the start was dropped.
func (t *tail) since(mark int64) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	b, lost := t.buf, t.lost
	if n := t.total - mark; n < int64(len(b)) {
		b, lost = b[int64(len(b))-n:], false
	}
	s := string(bytes.ToValidUTF8(bytes.TrimSpace(b), []byte("\uFFFD")))
	if lost && s != "" {
		s = "…" + s
	}
	return s
}
