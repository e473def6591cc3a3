package hook

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/openmax/openmax/internal/jsonrpc"
)

// MaxLine is the longest line read from a hook, without its newline. A
// longer line is malformed output: what was read of it is dropped, so a
// hook writing an endless line costs at most this much memory.
const MaxLine = 1 << 20

// errLineTooLong is a line over MaxLine.
var errLineTooLong = fmt.Errorf("%w: a line longer than %d bytes (1 MiB)", errMalformed, MaxLine)

// lineReader reads a hook's bounded lines: internal/jsonrpc's framing,
// reporting a line as errLineTooLong as soon as it passes the cap (a hook
// may never end it). It is not safe for concurrent use.
type lineReader struct{ r *jsonrpc.Reader }

func newLineReader(r io.Reader, max int) *lineReader {
	return &lineReader{r: jsonrpc.NewEarlyReader(r, max)}
}

// next returns the next line without its newline (nor a trailing CR). A
// line over the cap is reported as errLineTooLong as soon as the cap is
// passed; the next call drops the rest of it. A final line without a
// newline is a line; then io.EOF.
func (r *lineReader) next() ([]byte, error) {
	line, err := r.r.ReadLine()
	var tooLong *jsonrpc.TooLongError
	if errors.As(err, &tooLong) {
		return nil, errLineTooLong
	}
	return line, err
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
