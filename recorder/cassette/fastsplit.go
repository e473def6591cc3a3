package cassette

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
)

// This file reads a large cassette on several cores. The fast reader's
// time is nearly all in the interactions, which are independent of one
// another, so a file in the layout it reads is cut at interaction
// boundaries into parts read at once, one goroutine each, each through a
// reader of its own on the file (pread: no part waits for another, and
// nothing is read twice or held whole).
//
// A part after the first is read as the document "interactions:" followed
// by its bytes. That reads as the whole file would only when the cuts fall
// between items of the top-level interactions list, so the cut points are
// lines that start an item at that list's column, and the parts' results
// are taken only when each holds what a cut between items gives: the first
// the members before the list (the version) and the list, every other part
// the list alone, the last part the session after it. Items cannot hide a
// line at the list's column (a block scalar's lines are indented past its
// key's), and a top-level scalar that could shows up as a member out of
// place. Anything else (a part the fast reader gives up on, an error, a
// file that changed size while read) discards the parts' results, and the
// caller reads the file in one pass, with that pass's result and errors.

// splitMin is the smallest file read in parts, splitPart the least each
// part gets, and splitProcs the cores to read on; tests change them.
var (
	splitMin   int64 = 512 << 10
	splitPart  int64 = 256 << 10
	splitProcs       = func() int { return runtime.GOMAXPROCS(0) }
)

const (
	// splitMaxParts bounds the parts (and goroutines) of one file.
	splitMaxParts = 8
	// splitWindow is how much of the file is searched at a time for a cut.
	splitWindow = 16 << 10
	// splitHead is how far into the file the list must start.
	splitHead = 64 << 10
	// splitReach is how far from a share's end a cut is looked for, on
	// either side (a file of one huge item is not read through for one).
	splitReach = 1 << 20
)

// ReadsInParts reports whether Load and ReadAny read a regular file of
// size bytes in parts, on several cores (as GOMAXPROCS now allows), when
// it is in the layout the recorder writes.
func ReadsInParts(size int64) bool { return splitParts(size) > 1 }

// splitParts is how many parts a file of size bytes is read in (1: one
// pass).
func splitParts(size int64) int {
	if size < splitMin {
		return 1
	}
	return int(min(int64(splitProcs()), size/max(splitPart, 1), splitMaxParts))
}

// readSplit reads the regular file fh, size bytes, in parts; ok is false
// when the caller must read it in one pass instead.
func readSplit(fh *os.File, size int64) (f *File, native, ok bool) {
	parts := splitParts(size)
	if parts < 2 {
		return nil, false, false
	}
	head := make([]byte, min(size, splitHead))
	if _, err := fh.ReadAt(head, 0); err != nil {
		return nil, false, false
	}
	item, first, ok := listItem(head)
	if !ok {
		return nil, false, false
	}
	cuts := []int64{0}
	for i := 1; i < parts; i++ {
		// The first item after the i-th share of the file, or failing
		// that (a long item there, or the session) the last one before it.
		low := max(cuts[len(cuts)-1], int64(first)) + 1
		target := max(size*int64(i)/int64(parts), low)
		at, found := findCut(fh, target, min(size*int64(i+1)/int64(parts), target+splitReach), item, false)
		if !found {
			at, found = findCut(fh, max(low, target-splitReach), target, item, true)
		}
		if found {
			cuts = append(cuts, at)
		}
	}
	if len(cuts) < 2 {
		return nil, false, false
	}
	cuts = append(cuts, size)

	type result struct {
		f      *File
		top    []string
		native bool
		ok     bool
	}
	res := make([]result, len(cuts)-1)
	var wg sync.WaitGroup
	for i := range res {
		wg.Go(func() {
			n := cuts[i+1] - cuts[i]
			cr := &countReader{r: io.NewSectionReader(fh, cuts[i], n)}
			var r io.Reader = cr
			if i > 0 {
				r = io.MultiReader(strings.NewReader(listKey), cr)
			}
			p := &fastReader{br: bufio.NewReaderSize(r, readBuffer)}
			pf, err := p.file()
			res[i] = result{pf, p.top, p.native, err == nil && cr.n == n}
		})
	}
	wg.Wait()
	// The file must have ended where it did when the cuts were made.
	if n, _ := fh.ReadAt(make([]byte, 1), size); n != 0 {
		return nil, false, false
	}

	last := len(res) - 1
	f = &File{Interactions: []*Interaction{}}
	for i, r := range res {
		var want [][]string
		switch i {
		case 0:
			want = [][]string{{"interactions"}, {"version", "interactions"}}
		case last:
			want = [][]string{{"interactions"}, {"interactions", "openmax"}}
		default:
			want = [][]string{{"interactions"}}
		}
		if !r.ok || !slices.ContainsFunc(want, func(w []string) bool { return slices.Equal(w, r.top) }) || r.f.Interactions == nil {
			return nil, false, false
		}
		f.Interactions = append(f.Interactions, r.f.Interactions...)
		native = native || r.native
	}
	f.Version = res[0].f.Version
	f.Session = res[last].f.Session
	return f, native, true
}

// listItem finds, in the head of a file, the list's key at the top level
// (listKey, which also starts every part after the first) and returns what
// begins an item's line ("- " at the column of the first item's) and the
// first item's offset.
func listItem(head []byte) (item []byte, first int, ok bool) {
	var at int
	switch {
	case bytes.HasPrefix(head, []byte(listKey)):
		at = len(listKey)
	default:
		i := bytes.Index(head, []byte("\n"+listKey))
		if i < 0 {
			return nil, 0, false
		}
		at = i + 1 + len(listKey)
	}
	line := head[at:]
	n := 0
	for n < len(line) && line[n] == ' ' {
		n++
	}
	if !bytes.HasPrefix(line[n:], []byte("- ")) || n > 16 {
		return nil, 0, false
	}
	return append([]byte{'\n'}, line[:n+2]...), at, true
}

// findCut returns the offset of the first line in [from, to) of fh that
// begins with item (a newline, the list's column of spaces, "- "), or with
// last the last such line.
func findCut(fh *os.File, from, to int64, item []byte, last bool) (int64, bool) {
	buf := make([]byte, splitWindow+len(item))
	cut, found := int64(0), false
	for at := from - 1; at < to; at += splitWindow {
		n, err := fh.ReadAt(buf, at)
		if n == 0 && err != nil {
			break
		}
		for w, off := buf[:n], int64(0); ; {
			i := bytes.Index(w, item)
			if i < 0 || at+off+int64(i)+1 >= to {
				break
			}
			cut, found = at+off+int64(i)+1, true
			if !last {
				return cut, true
			}
			w, off = w[i+1:], off+int64(i)+1
		}
	}
	return cut, found
}

// countReader counts the bytes read through it.
type countReader struct {
	r io.Reader
	n int64
}

func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}
