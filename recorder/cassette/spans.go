package cassette

import (
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"sync"

	"github.com/openmax/openmax/internal/safefile"
)

// A recording need not hold the text of what it saved: once an item is in
// the file, its Span says where, and Rewrite and Close copy it from there
// into the file they write. So a recording's memory does not grow with
// what it has recorded (a long conversation's requests each carry the
// history so far: their text grows with the square of the turns). Each
// span keeps a checksum of the bytes written; text read back that does
// not match (the file changed under the recording) is an error, never
// copied.

// Span is where a save put an item's text: its offset and length in the
// file the save wrote, and the CRC-32C of those bytes.
type Span struct {
	Off int64
	Len int
	Sum uint32
}

// Text is an item's text for a save: Bytes, or when Bytes is nil, the
// span of the file an earlier save of the same appender put it at.
type Text struct {
	Bytes []byte
	At    Span
}

// InMemory is items as Texts held in memory.
func InMemory(items [][]byte) []Text {
	out := make([]Text, len(items))
	for i, b := range items {
		out[i].Bytes = b
	}
	return out
}

// castagnoli is made on first use: making it builds tables, which every
// openmax process would pay for at its start (0.2 ms), recording or not.
var castagnoli = sync.OnceValue(func() *crc32.Table { return crc32.MakeTable(crc32.Castagnoli) })

func spanOf(off int64, b []byte) Span {
	return Span{Off: off, Len: len(b), Sum: crc32.Checksum(b, castagnoli())}
}

// errChanged reports text read back that is not what was written.
func (a *Appender) errChanged(s Span) error {
	return fmt.Errorf("cassette: %s changed while being recorded: the %d bytes at offset %d are not the text written there", a.path, s.Len, s.Off)
}

// source opens what the spans of items are read from: the file this
// appender writes, or (after Close, or before its first save) the file at
// its path. done closes what source opened. Nothing is opened when every
// item is in memory.
func (a *Appender) source(items []Text) (src *os.File, done func(), err error) {
	for _, it := range items {
		if it.Bytes == nil {
			if a.f != nil {
				return a.f, func() {}, nil
			}
			// Never blocks: a FIFO swapped in at the path is refused.
			f, _, err := safefile.Open(a.path)
			if err != nil {
				return nil, nil, fmt.Errorf("cassette: reading back what was recorded: %w", err)
			}
			return f, func() { f.Close() }, nil
		}
	}
	return nil, func() {}, nil
}

// copyItem writes t to w (its bytes, or its span read from src, checked)
// and returns the span it has in what w writes, which starts at off.
func (a *Appender) copyItem(w io.Writer, src *os.File, t Text, off int64, buf []byte) (Span, error) {
	if t.Bytes != nil {
		_, err := w.Write(t.Bytes)
		return spanOf(off, t.Bytes), err
	}
	if src == nil {
		return Span{}, errors.New("cassette: an item read back with no file to read it from")
	}
	sum := uint32(0)
	for done := 0; done < t.At.Len; {
		n := min(len(buf), t.At.Len-done)
		m, err := src.ReadAt(buf[:n], t.At.Off+int64(done))
		if m < n {
			if err == nil || err == io.EOF {
				return Span{}, a.errChanged(t.At)
			}
			return Span{}, fmt.Errorf("cassette: reading back what was recorded: %w", err)
		}
		sum = crc32.Update(sum, castagnoli(), buf[:n])
		if _, err := w.Write(buf[:n]); err != nil {
			return Span{}, err
		}
		done += n
	}
	if sum != t.At.Sum {
		return Span{}, a.errChanged(t.At)
	}
	return Span{Off: off, Len: t.At.Len, Sum: sum}, nil
}

// ReadItem is the text of t: its bytes, or its span read back (checked)
// from the file this appender writes, or from the file at its path once
// it has let go of it.
func (a *Appender) ReadItem(t Text) ([]byte, error) {
	if t.Bytes != nil {
		return t.Bytes, nil
	}
	src, done, err := a.source([]Text{t})
	if err != nil {
		return nil, err
	}
	defer done()
	var out sliceWriter
	out.b = make([]byte, 0, t.At.Len)
	if _, err := a.copyItem(&out, src, t, 0, make([]byte, min(t.At.Len, 64<<10))); err != nil {
		return nil, err
	}
	return out.b, nil
}

type sliceWriter struct{ b []byte }

func (w *sliceWriter) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}

// countWriter counts what goes through it.
type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
