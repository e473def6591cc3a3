package cassette

import (
	"bytes"
	"errors"
	"reflect"
)

// A recording in progress is a file in the working layout (see append.go):
// its saves follow one another, each ended by a line that was "..." and
// became the comment "#.." when the next save joined the document. An OS
// crash or a power cut can leave a save torn: the disk got some of the
// bytes the save wrote and not others (the page cache writes pages back
// in any order, and a disk writes a 512-byte sector whole at best). Such a
// file may not load at all (the "#.." of a save on the disk, and not the
// line that hid the session before it: two top-level sessions), may end
// in blank lines where the save's text should be, or may hide the session
// of the last complete save (a crash, or a kill, between hiding it and
// flipping the "...").
//
// recoverSaves reads such a file as it was at its last complete save: it
// cuts the document back to the end of a save and shows that save's
// session again. Every interaction a complete save held is kept; what a
// torn save wrote is not trusted. Stock go-vcr need not read a torn file.

// maxCutBacks bounds how many saves recoverSaves goes back: a crash tears
// the saves since the last sync, a millisecond's worth.
const maxCutBacks = 16

// recoverSaves is the cassette data held at its last complete save when
// data is a working-layout file that decoded (and checked) as f, err only
// because a save was torn; f and err as they are otherwise.
func recoverSaves(data []byte, f *File, err error) (*File, error) {
	if !bytes.HasPrefix(data, []byte(headerText)) {
		return f, err
	}
	ends := savedEnds(data)
	if len(ends) == 0 {
		return f, err
	}
	last := ends[len(ends)-1]
	live := -1 // the "..." line that ends the document, after the last save
	if i := bytes.Index(data[last:], []byte("\n"+endLine)); i >= 0 {
		live = last + i + 1
	}
	switch {
	case errors.Is(err, errNotNative):
		// A document that read as something else: a torn save only if
		// the last one is unconfirmed or hid its session (else it is what
		// it is, and parsing it again here would only cost).
		if live >= 0 && hiddenKey(data[last:live]) < 0 {
			return f, err
		}
	case err != nil:
	case live < 0:
		// The last save's "..." is not on the disk: its text is not all
		// there, whatever of it decoded.
	case f.Session == nil && hiddenKey(data[last:live]) >= 0:
		// The last save's session hidden, its "..." not flipped.
	default:
		return f, err
	}
	cuts := make([]int, 0, len(ends)+1)
	if live >= 0 {
		cuts = append(cuts, live)
	}
	for i := len(ends) - 1; i >= 0; i-- {
		cuts = append(cuts, ends[i])
	}
	for _, p := range cuts[:min(len(cuts), maxCutBacks)] {
		from := 0 // where the save that p ends starts
		for _, e := range ends {
			if e < p {
				from = e
			}
		}
		doc := data[:p]
		repaired := p != live // cut back, or a hidden session shown again
		if k := hiddenKey(data[from:p]); k >= 0 {
			doc = bytes.Clone(doc)
			copy(doc[from+k:], liveKey)
			repaired = true
		}
		g, gerr := parseYAML(doc)
		if gerr == nil {
			gerr = g.check()
		}
		if gerr == nil {
			if f != nil && reflect.DeepEqual(f.Interactions, g.Interactions) && reflect.DeepEqual(f.Session, g.Session) {
				return f, nil // the cut lost nothing (an empty save): not worth a note
			}
			g.TornSave = repaired
			return g, nil
		}
	}
	return f, err
}

// savedEnds are the offsets of the "#.." lines in data: the ends of the
// saves that later saves joined to the document.
func savedEnds(data []byte) []int {
	var ends []int
	flipped := []byte("\n#" + endLine[1:])
	for off := 0; ; {
		i := bytes.Index(data[off:], flipped)
		if i < 0 {
			return ends
		}
		ends = append(ends, off+i+1)
		off += i + 1
	}
}

// hiddenKey is the offset in seg (one save's text) of the line that hid
// its session (Appender.flip writes it over the session's key line, at the
// key line's width), or -1.
func hiddenKey(seg []byte) int {
	found := -1
	for off := 0; off < len(seg); {
		end := bytes.IndexByte(seg[off:], '\n')
		if end < 0 {
			break
		}
		if end+1 == keyWidth && isHiddenKey(seg[off:off+end]) {
			found = off
		}
		off += end + 1
	}
	return found
}

// isHiddenKey reports whether line (without its line break) is what flip
// writes: "x" and eight hex digits, ": |", indented by nothing or four,
// padded with spaces.
func isHiddenKey(line []byte) bool {
	line = bytes.TrimRight(line, " ")
	line = bytes.TrimPrefix(line, []byte("    "))
	if len(line) != 12 || line[0] != 'x' || string(line[9:]) != ": |" {
		return false
	}
	for _, c := range line[1:9] {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}
