package scan

// Text: any file that is not a cassette, read streaming in bounded
// blocks with the named rules and the header rules.

import (
	"bufio"
	"bytes"
	"io"
	"sort"
	"strings"
	"unsafe"

	"github.com/openmax/openmax/recorder"
)

// textChunk is how much of a text is read at once; a match may not be
// longer than textOverlap, which consecutive chunks share.
const (
	textChunk   = 1 << 20
	textOverlap = 4 << 10
)

// text scans r as text, streaming, with the named rules and, on lines
// that read as an HTTP header (an httprr dump), the header rules. Its
// lines are numbered from base+1. size is how long r is expected to be
// (the buffer is no bigger than it needs). It returns the bytes read.
func (s *scanner) text(r io.Reader, size int64, base int, p place) (int64, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	buf := make([]byte, 0, min(size+1, textChunk)+textOverlap)
	line := base + 1 // the line buf[0] is on
	var total int64
	for {
		n, err := io.ReadFull(br, buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		total += int64(n)
		last := err == io.EOF || err == io.ErrUnexpectedEOF
		if err != nil && !last {
			return total, err
		}
		// Scan up to a line end before the overlap (all of it at the end).
		limit := len(buf)
		if !last {
			limit = len(buf) - textOverlap
			if i := bytes.LastIndexByte(buf[:limit], '\n'); i > 0 {
				limit = i + 1
			}
		}
		s.textBlock(p, buf, limit, line)
		if last {
			return total, nil
		}
		line += bytes.Count(buf[:limit], []byte("\n"))
		n = copy(buf, buf[limit:])
		buf = buf[:n]
	}
}

// textBlock reports the matches starting before limit in buf, whose first
// line is line; header-looking lines are read whole when they end before
// limit.
func (s *scanner) textBlock(p place, buf []byte, limit, line int) {
	// A view of buf, not a copy: a 1 MiB copy per block is garbage the GC
	// may not reclaim in time on a busy machine, and the peak memory of a
	// huge file must not depend on that. Whatever outlives the call is
	// cloned out of it (buf is reused for the next block).
	if len(buf) == 0 {
		return
	}
	str := unsafe.String(unsafe.SliceData(buf), len(buf))
	var ends []int // the offset of each line end in the block
	for i := 0; i < len(str); i++ {
		if str[i] == '\n' {
			ends = append(ends, i)
		}
	}
	lineOf := func(off int) int { return line + sort.SearchInts(ends, off) }
	for _, m := range textMatches(str) {
		if m.at < limit {
			s.report(place{ix: p.ix, where: p.where, from: lineOf(m.at), exact: true}, m.rule, strings.Clone(m.value))
		}
	}
	off := 0
	for off < limit {
		end := strings.IndexByte(str[off:], '\n')
		if end < 0 {
			end = len(str) - off
		}
		l := str[off : off+end]
		if k, v, ok := strings.Cut(l, ": "); ok && len(l) < 8<<10 && headerName(k) && (recorder.SecretHeader(k) || strings.EqualFold(k, "set-cookie")) {
			// The same where as the named matches above, so one found by both
			// is reported once.
			s.header(place{ix: p.ix, where: p.where, from: lineOf(off), exact: true}, strings.Clone(k), strings.Clone(strings.TrimRight(v, "\r")))
		}
		off += end + 1
	}
}

// headerName reports whether k can be an HTTP header name.
func headerName(k string) bool {
	if k == "" || len(k) > 64 {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}
