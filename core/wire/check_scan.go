package wire

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"slices"
	"unicode/utf8"
)

// The parallel check's line reader. A worker reads its block line by line
// in one walk: the walk that checks a line's JSON and splits its members
// also finds the line's end (a newline where the object is over), and
// notes whether any byte was outside ASCII (only then is UTF-8 checked,
// over that line). Most lines of a stream open with the same bytes, through
// their type and the next key ({"session_id":"s-…","type":"token","text":),
// so a worker remembers a few such prefixes with their members and their
// definition, and compares the next line's first bytes with them instead
// of reading them again. Once a line with a prefix was legal, the prefix's
// members need no check of their own again: only the rest of the line is
// checked (quickShape), and any doubt goes to the full check.
//
// It only has to be sound. Whatever it accepts is one line that the serial
// check would split into the same members: the walk takes no newline as
// white space, so it never reads past its line, and it accepts nothing
// splitObject would not. A remembered prefix ends just after a top-level
// colon, so the walk resumes in the state it would have reached by reading
// those bytes. Anything else (bad syntax, a duplicate or escaped key, deep
// nesting, bad UTF-8, a newline inside the object) goes back to the cut
// and prepare of the serial check, which names the problem.
// TestParallelStreamMatchesSerialRapid and TestScanLineMatchesSerialRapid
// hold it to that.

// memoSlots is how many prefixes a worker remembers, most recently used
// first; memoMembers is how many members a prefix may hold.
const (
	memoSlots   = 8
	memoMembers = 4
)

// lineMemo is a line's prefix that a worker has read: the bytes, through
// the member "type" (or a session_id right behind it) and the key of the
// next member with its colon, the members in it as offsets, that key, and
// the definition "type" names. Only an ASCII prefix with plain keys is
// remembered.
type lineMemo struct {
	prefix  []byte
	members [memoMembers]memoMember
	n       int
	k0, k1  int // the key whose colon ends the prefix
	def     *Def

	// A line with this prefix was legal; quick: quickShape may decide the
	// next ones, checking the fields of def not in the prefix (tail).
	quick bool
	tail  []int
}

type memoMember struct {
	k0, k1, v0, v1 int
	plain          bool
}

// checkWorker prepares the parallel check's batches on one goroutine.
type checkWorker struct {
	c     *Checker    // the worker's copy of the options (forWorker)
	memos []*lineMemo // most recently used first
	obj   object      // reused: the members of the line being read
}

func newCheckWorker(c *Checker) *checkWorker { return &checkWorker{c: c.forWorker()} }

// prepareBatch prepares every line of b.
func (w *checkWorker) prepareBatch(b *checkBatch, longest int64) {
	defer close(b.ready)
	if b.block {
		w.prepareBlock(b, longest)
		return
	}
	for i := range b.lines { // a held line, or one too long
		if b.lines[i].tooLong == 0 {
			w.prepareLine(b, &b.lines[i], b.held)
		}
	}
}

// prepareBlock cuts b.buf into lines with the splitter's rules (a trailing
// CR is not part of a line, a last line without a newline still counts, a
// line longer than longest is reported by its size) and prepares them.
func (w *checkWorker) prepareBlock(b *checkBatch, longest int64) {
	data := b.buf
	for p := 0; p < len(data); {
		if !w.c.twoPass { // the old reading, as a test's oracle, is all serial
			if next, ok := w.scanLine(b, p, longest); ok {
				p = next
				continue
			}
		}
		end, next := len(data), len(data)
		if i := bytes.IndexByte(data[p:], '\n'); i >= 0 {
			end, next = p+i, p+i+1
		}
		if end > p && data[end-1] == '\r' {
			end--
		}
		if n := int64(end - p); n > longest {
			addLine(b).tooLong = n
		} else {
			w.prepareLine(b, addLine(b), data[p:end])
		}
		p = next
	}
}

// prepareLine prepares one line the way the serial check does, its members
// appended whole to b.slab.
func (w *checkWorker) prepareLine(b *checkBatch, l *batchLine, line []byte) {
	if cap(b.slab)-len(b.slab) < 32 {
		b.slab = slices.Grow(b.slab, max(64, cap(b.slab)))
	}
	n := len(b.slab)
	var m object
	l.typ, l.def, m, l.err = w.c.prepare(b.slab[n:], line)
	if len(m) > 0 && cap(b.slab)-n >= len(m) && &m[0] == &b.slab[n : n+1][0] {
		b.slab = b.slab[:n+len(m)]
	} else {
		b.slab = append(b.slab, m...)
	}
	l.m0, l.m1, l.full = int32(n), int32(len(b.slab)), true
}

// scanLine reads the line at b.buf[p:] when it is one well-formed JSON
// object: it appends the line, prepared, to b.lines, its members to b.cms,
// and returns where the next line starts. ok is false, with nothing
// appended, when the line is anything else.
func (w *checkWorker) scanLine(b *checkBatch, p int, longest int64) (next int, ok bool) {
	data := b.buf
	o := w.obj[:0]
	cms := b.cms
	m0 := len(cms)
	var (
		acc    uint64 // the OR of every string byte: a high bit means non-ASCII
		def    *Def
		closed bool // the object's closing brace was read
		keyed  bool // key (data[k0:k1]) was read, its colon too
		k0, k1 int
		colons [memoMembers + 1]int // where the colon after each first key ends
	)
	i := p
	mm := w.lookup(data[p:])
	if mm != nil {
		o = slices.Grow(o, mm.n)[:mm.n]
		for k, x := range mm.members[:mm.n] {
			// Field by field (see checkBatch.members).
			e := &o[k]
			e.key, e.raw, e.plain = data[p+x.k0:p+x.k1], data[p+x.v0:p+x.v1], x.plain
			cms = appendCmember(cms, p+x.k0, p+x.k1, p+x.v0, p+x.v1, x.plain)
		}
		def, i = mm.def, ckSpace(data, p+len(mm.prefix))
		keyed, k0, k1 = true, p+mm.k0, p+mm.k1
	} else {
		i = ckSpace(data, p)
		if i >= len(data) || data[i] != '{' {
			return p, false
		}
		i = ckSpace(data, i+1)
		if i < len(data) && data[i] == '}' {
			i, closed = i+1, true
		}
	}
	for !closed {
		if !keyed {
			if i >= len(data) || data[i] != '"' {
				return p, false
			}
			end, a, esc, ok := ckString(data, i)
			if !ok || esc {
				return p, false // an escaped key: the serial check decodes it
			}
			acc |= a
			k0, k1 = i+1, end-1
			for k := range o {
				if string(o[k].key) == string(data[k0:k1]) {
					return p, false // the serial check names the duplicate
				}
			}
			i = ckSpace(data, end)
			if i >= len(data) || data[i] != ':' {
				return p, false
			}
			if k := len(o); k <= memoMembers {
				colons[k] = i + 1 - p
			}
			i = ckSpace(data, i+1)
		}
		keyed = false
		var (
			end   int
			a     uint64
			esc   bool
			ok    bool
			plain bool
		)
		if i < len(data) && data[i] == '"' {
			end, a, esc, ok = ckString(data, i)
			plain = !esc
		} else {
			end, a, ok = ckValue(data, i, 1)
		}
		if !ok {
			return p, false
		}
		acc |= a
		n := len(o)
		o = slices.Grow(o, 1)[:n+1]
		e := &o[n]
		e.key, e.raw, e.plain = data[k0:k1], data[i:end], plain
		cms = appendCmember(cms, k0, k1, i, end, plain)
		if i, closed, ok = ckNext(data, end, '}'); !ok {
			return p, false
		}
	}
	// After the object: white space up to the newline or the end.
	j := ckSpace(data, i)
	next = j
	if j < len(data) {
		if data[j] != '\n' {
			return p, false
		}
		next = j + 1
	}
	end := j
	if data[end-1] == '\r' {
		end-- // not part of the line (the object's '}' is before it)
	}
	line := data[p:end]
	if n := int64(len(line)); n > longest {
		addLine(b).tooLong = n
		return next, true
	}
	if acc&highs != 0 && !utf8.Valid(line) {
		return p, false
	}
	w.obj = o
	b.cms = cms
	l := addLine(b)
	l.m0, l.m1 = int32(m0), int32(len(cms))
	if mm != nil && mm.quick && w.quickShape(mm, o) {
		l.typ, l.def = mm.def.Name, mm.def
		return next, true
	}
	l.typ, l.def, l.err = w.c.prepareObject(o, def)
	if mm == nil && l.err == nil {
		w.remember(data[p:], o, cms[m0:], p, &colons, l.def)
	}
	return next, true
}

// addLine appends a zero line to b and returns it, to be filled in field
// by field (see checkBatch.members).
func addLine(b *checkBatch) *batchLine {
	n := len(b.lines)
	b.lines = slices.Grow(b.lines, 1)[:n+1]
	l := &b.lines[n]
	*l = batchLine{}
	return l
}

func appendCmember(cms []cmember, k0, k1, v0, v1 int, plain bool) []cmember {
	n := len(cms)
	cms = slices.Grow(cms, 1)[:n+1]
	e := &cms[n]
	e.k0, e.k1, e.v0, e.v1 = uint32(k0), uint32(k1), uint32(v0), uint32(v1)
	if plain {
		e.v1 |= plainBit
	}
	return cms
}

// lookup returns the remembered prefix rest starts with, if any, and makes
// it the most recently used.
func (w *checkWorker) lookup(rest []byte) *lineMemo {
	for k, mm := range w.memos {
		if len(rest) > len(mm.prefix) && bytes.Equal(rest[:len(mm.prefix)], mm.prefix) {
			if k > 0 {
				copy(w.memos[1:k+1], w.memos[:k])
				w.memos[0] = mm
			}
			return mm
		}
	}
	return nil
}

// keyIs reports whether key is name, byte by byte (keys are short: a
// loop is cheaper than the call string comparison makes).
func keyIs(key []byte, name string) bool {
	if len(key) != len(name) {
		return false
	}
	for i := range len(name) {
		if key[i] != name[i] {
			return false
		}
	}
	return true
}

// remember keeps the prefix of rest (a legal line just read, at p in its
// block, with its members m, cms as offsets) up to the member "type", or
// a session_id right behind it, and the key of the member after it, colon
// included (colons holds where the colon after each of the first keys
// ends).
func (w *checkWorker) remember(rest []byte, m object, cms []cmember, p int, colons *[memoMembers + 1]int, d *Def) {
	t := 0
	for t < len(m) && string(m[t].key) != "type" {
		t++
	}
	if t+1 < len(m) && string(m[t+1].key) == "session_id" {
		t++
	}
	if t+1 >= len(m) || t >= memoMembers {
		return // no member after it, or too far in
	}
	cut := colons[t+1]
	for _, c := range rest[:cut] {
		if c >= utf8.RuneSelf {
			return
		}
	}
	var mm *lineMemo
	if len(w.memos) < memoSlots {
		mm = &lineMemo{}
		w.memos = append(w.memos, nil)
	} else {
		mm = w.memos[len(w.memos)-1]
	}
	copy(w.memos[1:], w.memos[:len(w.memos)-1])
	w.memos[0] = mm
	mm.prefix = append(mm.prefix[:0], rest[:cut]...)
	mm.n, mm.def = t+1, d
	for k, x := range cms[:mm.n] {
		mm.members[k] = memoMember{k0: int(x.k0) - p, k1: int(x.k1) - p, v0: int(x.v0) - p,
			v1: int(x.v1&^plainBit) - p, plain: m[k].plain}
	}
	mm.k0, mm.k1 = int(cms[t+1].k0)-p, int(cms[t+1].k1)-p

	// The line was legal, so the prefix's members passed every check of
	// their own: a later line with the same prefix needs only its other
	// members checked (quickShape), unless the type's session_id is not in
	// the prefix (an event's is checked on its own, before the fields).
	prefix := func(name string) bool {
		for _, x := range mm.members[:mm.n] {
			if string(mm.prefix[x.k0:x.k1]) == name {
				return true
			}
		}
		return false
	}
	mm.quick = !(d.SessionID && d.Role == RoleEvent) || prefix("session_id")
	mm.tail = mm.tail[:0]
	for k := range d.Fields {
		if !prefix(d.Fields[k].Name) {
			mm.tail = append(mm.tail, k)
		}
	}
}

// quickShape reports whether the members m of a line with a remembered
// prefix certainly pass prepareObject: those after the prefix (tail) are
// checked: every field not in the prefix is present
// (or optional) with a value plainValue accepts, no session_id where the
// type carries none, under Strict no unknown member, and the type's value
// rules hold. false means "ask prepareObject", which names the problem.
func (w *checkWorker) quickShape(mm *lineMemo, m object) bool {
	d, tail := mm.def, m[mm.n:]
	for _, k := range mm.tail {
		f := &d.Fields[k]
		var x *member
		for j := range tail {
			if keyIs(tail[j].key, f.Name) {
				x = &tail[j]
				break
			}
		}
		if x == nil {
			if f.Optional {
				continue
			}
			return false
		}
		if !plainValue(f, x.raw, x.plain) {
			return false
		}
	}
	for _, x := range tail {
		if !d.SessionID && string(x.key) == "session_id" {
			return false
		}
		// "type", and an event's session_id, are in the prefix: the
		// tail's known members are the fields.
		if w.c.strict && !knownMember(d.Fields, nil, x.key) {
			return false
		}
	}
	return w.c.values(d.Name, m) == nil
}

// ckSpace skips JSON white space but a newline, which ends the line.
func ckSpace(data []byte, i int) int {
	for i < len(data) && (data[i] == ' ' || data[i] == '\t' || data[i] == '\r') {
		i++
	}
	return i
}

// ckString is scanStringValid (scan.go) that also returns the OR of the
// string's bytes, and jumps to the first special byte of a word rather than
// stepping to it.
func ckString(data []byte, i int) (end int, acc uint64, esc, ok bool) {
	j := i + 1
	for {
	word:
		for j+8 <= len(data) {
			w := binary.LittleEndian.Uint64(data[j:])
			if s := special8Mask(w); s != 0 {
				k := bits.TrailingZeros64(s) >> 3
				acc |= w & (1<<(8*k) - 1)
				j += k
				break word
			}
			acc |= w
			j += 8
		}
		for j < len(data) && strPlain[data[j]] {
			acc |= uint64(data[j])
			j++
		}
		if j >= len(data) {
			return j, acc, esc, false
		}
		switch data[j] {
		case '"':
			return j + 1, acc, esc, true
		case '\\':
			n := escapeLen(data[j:])
			if n == 0 {
				return j, acc, true, false
			}
			j, esc = j+n, true
		default: // a control byte, the newline among them
			return j, acc, esc, false
		}
	}
}

// escapeLen is the length of the JSON escape s starts with (s[0] is the
// backslash), or 0 when it is not one.
func escapeLen(s []byte) int {
	if len(s) < 2 {
		return 0
	}
	switch s[1] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		return 2
	case 'u':
		if len(s) >= 6 && hexDigit[s[2]] && hexDigit[s[3]] && hexDigit[s[4]] && hexDigit[s[5]] {
			return 6
		}
	}
	return 0
}

// ckOpen steps into the container whose opening byte is at i, depth
// levels down and closing with end: next is at its first member or
// element, or just past end when it is empty.
func ckOpen(data []byte, i, depth int, end byte) (next int, empty, ok bool) {
	if depth >= maxScanDepth {
		return i, false, false
	}
	i = ckSpace(data, i+1)
	if i < len(data) && data[i] == end {
		return i + 1, true, true
	}
	return i, false, true
}

// ckNext reads what follows a member or an element of a container that
// closes with end: the closing byte (done, i just past it) or a comma (i at
// what follows it). ok is false for anything else.
func ckNext(data []byte, i int, end byte) (next int, done, ok bool) {
	i = ckSpace(data, i)
	switch {
	case i >= len(data):
		return i, false, false
	case data[i] == end:
		return i + 1, true, true
	case data[i] == ',':
		return ckSpace(data, i+1), false, true
	}
	return i, false, false
}

// special8Mask flags (in its high bit) each byte of w that is a quote, a
// backslash or below 0x20 (special8). A borrow only runs upwards, so the
// lowest flag is exact: it marks the first special byte.
func special8Mask(w uint64) uint64 {
	below := func(x, n uint64) uint64 { return (x - ones*n) &^ x & highs }
	return below(w, 0x20) | below(w^(ones*'"'), 1) | below(w^(ones*'\\'), 1)
}

// ckValue is scanValueValid (scan.go) with ckSpace and ckString: the end
// of the value at i, the OR of its string bytes, and whether it is one.
func ckValue(data []byte, i, depth int) (end int, acc uint64, ok bool) {
	if i >= len(data) {
		return i, 0, false
	}
	switch c := data[i]; {
	case c == '"':
		end, acc, _, ok := ckString(data, i)
		return end, acc, ok
	case c == '{' || c == '[':
		end := byte('}')
		if c == '[' {
			end = ']'
		}
		i, empty, ok := ckOpen(data, i, depth, end)
		if empty || !ok {
			return i, 0, ok
		}
		for {
			if c == '{' { // a member: its key and colon first
				if i >= len(data) || data[i] != '"' {
					return i, acc, false
				}
				kend, a, _, ok := ckString(data, i)
				if !ok {
					return kend, acc, false
				}
				acc |= a
				if i = ckSpace(data, kend); i >= len(data) || data[i] != ':' {
					return i, acc, false
				}
				i = ckSpace(data, i+1)
			}
			var a uint64
			if i, a, ok = ckValue(data, i, depth+1); !ok {
				return i, acc, false
			}
			acc |= a
			var done bool
			if i, done, ok = ckNext(data, i, end); done || !ok {
				return i, acc, ok
			}
		}
	case c == 't':
		end, ok := scanLiteral(data, i, "true")
		return end, 0, ok
	case c == 'f':
		end, ok := scanLiteral(data, i, "false")
		return end, 0, ok
	case c == 'n':
		end, ok := scanLiteral(data, i, "null")
		return end, 0, ok
	case c == '-' || (c >= '0' && c <= '9'):
		end, ok := scanNumberValid(data, i)
		return end, 0, ok
	}
	return i, 0, false
}
