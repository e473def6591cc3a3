package cassette

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/openmax/openmax/internal/atomicfile"
	"gopkg.in/yaml.v3"
)

// This file is the incremental writing side of a cassette: a recording
// appends each interaction to the file instead of rewriting it, so the cost
// of a save does not grow with the interactions before it, while the file
// stays a cassette that Load and stock go-vcr read, whole, at every instant
// (a process killed at any moment leaves every save that had returned).
//
// The working layout. The document ends at a line "..." (YAML's document
// end: both readers stop there and ignore what follows, so bytes being
// written after it are invisible). A save writes its new text after that
// line, where a torn write does no harm, and then makes it part of the
// document by turning the "..." into a comment ("#.."): one byte. The new
// text is the new interactions (YAML list items, which continue the list
// above), the session again (it must follow them: the list is not closed
// until the next top-level key) and a new "..." line.
//
// The session from the save before stays in the file but hidden: its key
// line ("openmax:" padded to a fixed width) is overwritten, in place and at
// the same width, with an unknown key whose value is a literal block
// scalar ("x0000002a: |"), so its lines become the text of a field that
// both readers ignore (of the last interaction, or of the top-level map
// before the first one). Its lines are written indented by six for that.
// A key line never crosses a 512-byte boundary, so the write that hides it
// lands on the disk whole (a disk writes a sector whole), and on a page
// (a kill cannot split it). When the old key line and the "..." line are
// in one sector, the two flips are one write, which neither a kill nor a
// crash can split; otherwise the key is hidden first and the "..." flipped
// next. A kill between the two (microseconds) leaves the session hidden
// with the document ending after it, which Load reads with that session
// shown again (see recoverSaves); an OS crash can also leave the second on
// the disk without the first (two sessions, which stock go-vcr's reader
// takes and openmax's cuts back to the save before).
//
// Text is placed so that no kernel page boundary splits a UTF-8 character
// (when some shift of up to 63 blank lines allows it): both readers refuse
// a file with a broken character anywhere, even after the end of the
// document, and a write killed midway stops at a page.
//
// Close rewrites the file atomically in the plain layout Marshal gives, so
// a finished recording is byte-for-byte what it always was.

const (
	headerText = "version: 1\n"
	listKey    = "interactions:\n"
	endLine    = "...\n"
	keyWidth   = 24 // the live session's key line, newline included
	pageSize   = 4096
	sectorSize = 512 // what a disk writes whole
	filePerm   = 0o600
	// shiftTries is how many placements (leading blank lines) a save tries
	// for text that has characters of several bytes.
	shiftTries = 64
	maxAhead   = 1 << 20
)

// minAhead and maxAhead bound the blank lines kept past the end (a
// variable: a test that reads the file at every write keeps it small).
var minAhead int64 = 64 << 10

// liveKey is the key line of the session the document holds.
var liveKey = padLine("openmax:")

func padLine(s string) []byte {
	b := bytes.Repeat([]byte{' '}, keyWidth)
	copy(b, s)
	b[keyWidth-1] = '\n'
	return b
}

// Appender writes a cassette incrementally (see the layout above). It is
// not safe for concurrent use; the recorder serialises its saves.
type Appender struct {
	f      *os.File
	path   string
	end    int64  // offset of the "..." line ending the document
	key    int64  // offset of the live session's key line, -1 when none
	tail   []byte // the file from key to the end of the "..." line, when in one sector
	buf    []byte // the text of the last save, reused by the next (place)
	items  int    // interactions in the document
	hidden int    // hidden sessions so far, for unique names
	alloc  int64  // the file's size: synced blank lines past the end
	cache  sessionCache
	// syncer syncs the file for a goroutine other than the one saving
	// (see Syncer); it owns closing a.f.
	syncer *Syncer
	// writeAt writes to the file; a test sees every write through it.
	writeAt func(f *os.File, p []byte, off int64) (int, error)
}

// Syncer makes the saves of an Appender durable from another goroutine,
// without holding up the goroutine that saves: a recorder appends without
// waiting for the disk on the path a client waits on, and syncs behind it
// (see Append). Sync is safe for concurrent use with the Appender's
// methods; it covers every save that had returned when it started.
type Syncer struct {
	mu sync.Mutex
	f  *os.File // nil once the appender let go of the file
}

// Sync makes every save the file holds durable. A file the appender has
// since replaced or closed needs nothing more: Rewrite and Close make their
// own file durable.
func (s *Syncer) Sync() error {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f == nil {
		return nil
	}
	if err := fdatasync(s.f); err != nil {
		return fmt.Errorf("cassette: %w", err)
	}
	return nil
}

// Syncer is what syncs the file being appended to, from another goroutine
// (nil before the first save).
func (a *Appender) Syncer() *Syncer { return a.syncer }

// setFile makes f the file appended to, closing the one before (after any
// sync of it in progress).
func (a *Appender) setFile(f *os.File) error {
	var err error
	if a.syncer != nil {
		a.syncer.mu.Lock()
		if a.syncer.f != nil {
			err = a.syncer.f.Close()
		}
		a.syncer.f = nil
		a.syncer.mu.Unlock()
	}
	a.f = f
	a.syncer = nil
	if f != nil {
		a.syncer = &Syncer{f: f}
	}
	return err
}

func (a *Appender) write(p []byte, off int64) error {
	w := a.writeAt
	if w == nil {
		w = (*os.File).WriteAt
	}
	_, err := w(a.f, p, off)
	return err
}

// CreateAppender starts a cassette at path holding no interactions. With
// exclusive it creates the file and fails (fs.ErrExist) if one is there;
// otherwise it replaces whatever is at path atomically.
func CreateAppender(path string, exclusive bool) (*Appender, error) {
	a := &Appender{path: path, key: -1}
	data := []byte(headerText + endLine)
	if exclusive {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, filePerm)
		if err != nil {
			return nil, err
		}
		_, werr := f.Write(data)
		if err := errors.Join(werr, f.Sync()); err != nil {
			f.Close()
			os.Remove(path)
			return nil, err
		}
		a.setFile(f) //nolint:errcheck // there was no file before
	} else if err := a.replace(data); err != nil {
		return nil, err
	}
	a.end = int64(len(headerText))
	a.alloc = int64(len(data))
	a.reserve(true) //nolint:errcheck // only a speed-up
	return a, nil
}

// reserve makes sure synced blank lines follow the document's end, so the saves that follow overwrite blocks the file
// already has and a sync need not commit a new size (a quarter of the
// time). The blank lines are after "...", outside the document; Close
// drops them.
func (a *Appender) reserve(sync bool) error {
	// Ahead by half the file (64 KiB to 1 MiB): the padding written
	// stays a fraction of what was saved.
	want := min(max(a.end/2, minAhead), maxAhead)
	from := a.end + int64(len(endLine))
	if a.alloc-from >= want {
		return nil
	}
	n := 2 * want
	from = max(from, a.alloc)
	blank := blankLines()
	for off := int64(0); off < n; off += int64(len(blank)) {
		if err := a.write(blank[:min(int64(len(blank)), n-off)], from+off); err != nil {
			return err
		}
	}
	if sync {
		if err := fdatasync(a.f); err != nil {
			return err
		}
	}
	a.alloc = from + n
	return nil
}

// blankLines is what reserve writes, a piece at a time (made on first use,
// not at every start of openmax).
var blankLines = sync.OnceValue(func() []byte { return bytes.Repeat([]byte{'\n'}, 64<<10) })

// Reserve writes blank lines past the document's end, if fewer are there
// than the next saves want, without syncing them: a save without
// durability calls it before its Syncer's next Sync, which makes the
// blank lines durable with the saves (see reserve).
func (a *Appender) Reserve() error {
	if a.f == nil {
		return nil
	}
	return a.reserve(false)
}

// replace writes data atomically over path and reopens it.
func (a *Appender) replace(data []byte) error {
	return a.replaceWith(func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// replaceWith writes what fill writes atomically over path and reopens it.
func (a *Appender) replaceWith(fill func(w io.Writer) error) error {
	if err := atomicfile.WriteWith(a.path, filePerm, fill); err != nil {
		return err
	}
	f, err := os.OpenFile(a.path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	a.setFile(f) //nolint:errcheck // the file replaced is not read again
	return nil
}

// EncodeInteraction is the text of one interaction as an item of the
// cassette's interaction list, exactly as Marshal writes it there.
func EncodeInteraction(it *Interaction) ([]byte, error) {
	return AppendInteraction(make([]byte, 0, encodedSize(it)), it)
}

// AppendInteraction appends EncodeInteraction's text of it to b: a caller
// that encodes interaction after interaction can reuse one buffer.
func AppendInteraction(b []byte, it *Interaction) ([]byte, error) {
	if out, ok := appendInteraction(slices.Grow(b, encodedSize(it)), it); ok {
		return out, nil
	}
	text, err := encodeInteractionYAML(it)
	if err != nil {
		return b, err
	}
	return append(b, text...), nil
}

// encodeInteractionYAML is EncodeInteraction through yaml.v3, for what
// appendInteraction leaves to it.
func encodeInteractionYAML(it *Interaction) ([]byte, error) {
	b, err := encodeYAML(struct {
		I []*Interaction `yaml:"interactions"`
	}{[]*Interaction{it}})
	if err != nil {
		return nil, err
	}
	return bytes.TrimPrefix(b, []byte(listKey)), nil
}

// encodedSize is about the size of an interaction's text, to allocate it
// once.
func encodedSize(it *Interaction) int {
	n := 512 + len(it.Request.Body) + len(it.Response.Body) + len(it.Request.URL)
	for k, vs := range it.Request.Headers {
		n += len(k) + 16
		for _, v := range vs {
			n += len(v) + 16
		}
	}
	for k, vs := range it.Response.Headers {
		n += len(k) + 16
		for _, v := range vs {
			n += len(v) + 16
		}
	}
	if it.Stream != nil {
		for _, c := range it.Stream.Chunks {
			n += len(c.Data) + 48
		}
	}
	return n + n/8
}

// EncodeYAML encodes v (a cassette, or any value made of structs, maps,
// slices and strings, such as a fake-provider scenario) as encodeYAML
// does, so every string reads back exactly.
func EncodeYAML(v any) ([]byte, error) { return encodeYAML(v) }

// encodeYAML is the one YAML encoding of cassettes: yaml.v3 with two-space
// indents, except that a string yaml.v3 would write as a literal block it
// cannot read back exactly is written double-quoted instead. yaml.v3 drops
// the leading line breaks of a block ("\nabc" reads back as "abc", "\n\n"
// as "\n": an SSE chunk that begins inside the blank line ending an event
// does that), and writes a block whose first line starts with a tab that
// neither it nor stock go-vcr can parse.
func encodeYAML(v any) ([]byte, error) {
	rv := reflect.ValueOf(v)
	if !hasUnsafeBlock(rv) {
		return emitYAML(v) // the usual case: exactly what yaml.v3 writes
	}
	// Encode a copy with each such string replaced by a plain placeholder,
	// then put the strings back into the node tree, double-quoted.
	var unsafe []string
	cp := replaceUnsafeBlocks(rv, &unsafe)
	var n yaml.Node
	if err := n.Encode(cp.Interface()); err != nil {
		return nil, err
	}
	restoreUnsafeBlocks(&n, unsafe)
	return emitYAML(&n)
}

func emitYAML(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// unsafeBlock reports a string yaml.v3 may not read back exactly as it
// writes it: one holding a line break (written as a literal block) that
// starts with a blank or a line break, or one holding a character YAML 1.1
// counts as a line break besides LF and CR (NEL, LS, PS) or a byte-order
// mark, which yaml.v3 writes raw.
func unsafeBlock(s string) bool {
	if s == "" || !utf8.ValidString(s) {
		// yaml.v3 writes a string that is not UTF-8 as !!binary, which is safe.
		return false
	}
	if strings.ContainsAny(s, "\u0085\u2028\u2029\ufeff") {
		return true
	}
	first, _ := utf8.DecodeRuneInString(s)
	return strings.Contains(s, "\n") && (first == '\n' || first == '\r' || unicode.IsSpace(first))
}

// placeholder is the stand-in for unsafe string i while encoding.
func placeholder(i int) string { return fmt.Sprintf("openmax-unsafe-block-%d-7b3f", i) }

// hasUnsafeBlock reports whether any exported string under v is unsafe.
func hasUnsafeBlock(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		return !v.IsNil() && hasUnsafeBlock(v.Elem())
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() && hasUnsafeBlock(v.Field(i)) {
				return true
			}
		}
	case reflect.Slice, reflect.Array:
		for i := 0; i < v.Len(); i++ {
			if hasUnsafeBlock(v.Index(i)) {
				return true
			}
		}
	case reflect.Map:
		for it := v.MapRange(); it.Next(); {
			if hasUnsafeBlock(it.Key()) || hasUnsafeBlock(it.Value()) {
				return true
			}
		}
	case reflect.String:
		return unsafeBlock(v.String())
	}
	return false
}

// replaceUnsafeBlocks returns a copy of v in which every unsafe string is
// a placeholder, the strings appended to unsafe in placeholder order.
func replaceUnsafeBlocks(v reflect.Value, unsafe *[]string) reflect.Value {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return v
		}
		p := reflect.New(v.Type().Elem())
		p.Elem().Set(replaceUnsafeBlocks(v.Elem(), unsafe))
		return p
	case reflect.Interface:
		if v.IsNil() {
			return v
		}
		out := reflect.New(v.Type()).Elem()
		out.Set(replaceUnsafeBlocks(v.Elem(), unsafe))
		return out
	case reflect.Struct:
		out := reflect.New(v.Type()).Elem()
		out.Set(v)
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() {
				out.Field(i).Set(replaceUnsafeBlocks(v.Field(i), unsafe))
			}
		}
		return out
	case reflect.Slice:
		if v.IsNil() {
			return v
		}
		out := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
		for i := 0; i < v.Len(); i++ {
			out.Index(i).Set(replaceUnsafeBlocks(v.Index(i), unsafe))
		}
		return out
	case reflect.Map:
		if v.IsNil() {
			return v
		}
		out := reflect.MakeMapWithSize(v.Type(), v.Len())
		for it := v.MapRange(); it.Next(); {
			out.SetMapIndex(replaceUnsafeBlocks(it.Key(), unsafe), replaceUnsafeBlocks(it.Value(), unsafe))
		}
		return out
	case reflect.String:
		if unsafeBlock(v.String()) {
			*unsafe = append(*unsafe, v.String())
			out := reflect.New(v.Type()).Elem()
			out.SetString(placeholder(len(*unsafe) - 1))
			return out
		}
	}
	return v
}

// restoreUnsafeBlocks puts the strings back in place of their
// placeholders, double-quoted.
func restoreUnsafeBlocks(n *yaml.Node, unsafe []string) {
	if n.Kind == yaml.ScalarNode {
		for i, s := range unsafe {
			if n.Value == placeholder(i) {
				n.Value, n.Style, n.Tag = s, yaml.DoubleQuotedStyle, "!!str"
				break
			}
		}
	}
	for _, c := range n.Content {
		restoreUnsafeBlocks(c, unsafe)
	}
}

// sessionText is the session as Marshal writes it, "openmax:" line first.
func sessionText(s *Session) ([]byte, error) {
	return encodeYAML(struct {
		S *Session `yaml:"openmax"`
	}{s})
}

// PlainText is the cassette in the plain layout Marshal gives, from
// interactions already encoded by EncodeInteraction.
func PlainText(items [][]byte, s *Session) ([]byte, error) {
	size := len(headerText) + len(listKey) + 32
	for _, it := range items {
		size += len(it)
	}
	var buf bytes.Buffer
	buf.Grow(size)
	if err := WritePlain(&buf, items, s); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// WritePlain writes what PlainText gives to w, the items as they are.
func WritePlain(w io.Writer, items [][]byte, s *Session) error {
	var sess []byte
	if s != nil {
		var err error
		if sess, err = sessionText(s); err != nil {
			return err
		}
	}
	head := headerText + "interactions: []\n"
	if len(items) > 0 {
		head = headerText + listKey
	}
	if _, err := io.WriteString(w, head); err != nil {
		return err
	}
	for _, it := range items {
		if _, err := w.Write(it); err != nil {
			return err
		}
	}
	_, err := w.Write(sess)
	return err
}

// Append adds interactions (encoded by EncodeInteraction, in order) and
// stores s as the cassette's session (nil: none). When Append returns the
// save is in the file: a process killed at any moment after loses nothing.
//
// With durable it is also on the disk: the new text is synced before it
// becomes part of the document and the save after, so an OS crash or a
// power cut leaves this save or the one before, whole. Without, nothing
// waits for the disk (a sync costs from a fifth of a millisecond to
// several on a busy disk); the next durable save, or Close, syncs it, and
// until then an OS crash can lose it or tear it (the disk holding part of
// what it wrote), which Load reads as the save before (see recoverSaves;
// stock go-vcr may refuse a torn file).
//
// It returns where each item is in the file (see Span).
func (a *Appender) Append(items [][]byte, s *Session, durable bool) ([]Span, error) {
	if a.f == nil {
		return nil, errors.New("cassette: nothing written yet to append to (Rewrite first)")
	}
	var sess []byte
	if s != nil {
		var err error
		if sess, err = a.cache.liveSession(s); err != nil {
			return nil, fmt.Errorf("cassette: %w", err)
		}
	}
	start := a.end + int64(len(endLine))
	text, key, offs := a.place(start, items, sess)
	if err := a.write(text, start); err != nil {
		return nil, a.cut(start, err)
	}
	if durable {
		if err := fdatasync(a.f); err != nil {
			return nil, a.cut(start, err)
		}
	}
	if err := a.flip(); err != nil {
		return nil, fmt.Errorf("cassette: %w", err)
	}
	if durable {
		if err := fdatasync(a.f); err != nil {
			return nil, fmt.Errorf("cassette: %w", err)
		}
	}
	spans := make([]Span, len(items))
	for i, it := range items {
		spans[i] = spanOf(start+int64(offs[i]), it)
	}
	a.items += len(items)
	a.end = start + int64(len(text)-len(endLine))
	a.alloc = max(a.alloc, start+int64(len(text)))
	a.setKey(start, key, text)
	a.buf = keep(text)
	if durable {
		a.reserve(true) //nolint:errcheck // only a speed-up
	}
	return spans, nil
}

// setKey notes where the live session's key line is after a save that
// wrote text at file offset start (key, its offset in text, -1 for none),
// with the text from there on when flip can rewrite it in one write.
func (a *Appender) setKey(start int64, key int, text []byte) {
	a.key, a.tail = -1, a.tail[:0]
	if key < 0 {
		return
	}
	a.key = start + int64(key)
	if a.key/sectorSize == a.end/sectorSize {
		a.tail = append(a.tail, text[key:]...)
	}
}

// cut ends the file at start, the end of the document, after a save that
// failed before it became part of the document: what the failed write left
// there (on a full disk, text cut off anywhere) is invisible to the
// readers, but a character torn in it would make them refuse the whole
// file. It returns err, for the caller to report.
func (a *Appender) cut(start int64, err error) error {
	if terr := a.f.Truncate(start); terr == nil {
		a.alloc = start
	}
	return fmt.Errorf("cassette: %w", err)
}

// place lays out the text of a save that starts at file offset start: the
// items, the session and the "..." line, after as few blank lines as keep
// a page boundary from splitting a character. It returns the text, the
// session key line's offset in it (-1 with no session) and each item's.
func (a *Appender) place(start int64, items [][]byte, sess []byte) ([]byte, int, []int) {
	size := len(listKey) + 2*sectorSize + len(sess) + len(endLine) + shiftTries
	for _, it := range items {
		size += len(it)
	}
	offs := make([]int, len(items))
	build := func(shift int) ([]byte, int, []int) {
		b := reuse(a.buf, size) // the key's padding is under a sector
		for range shift {
			b = append(b, '\n')
		}
		if a.items == 0 && len(items) > 0 {
			b = append(b, listKey...)
		}
		for i, it := range items {
			offs[i] = len(b)
			b = append(b, it...)
		}
		key := -1
		if sess != nil {
			b = alignKey(b, start)
			key = len(b)
			b = append(b, sess...)
		}
		return append(b, endLine...), key, offs
	}
	for shift := range shiftTries {
		b, key, offs := build(shift)
		if splitsNoRune(b, start) {
			return b, key, offs
		}
		a.buf = b // each try reuses the memory of the one before
	}
	return build(0)
}

// alignKey pads b (to be written at file offset start) so that a key line
// written next does not cross a sector boundary (nor so a page boundary):
// it is rewritten in place, and a write within a sector reaches the disk
// whole, and is one step a kill cannot split. The padding is a comment
// line and then blank lines: the comment ends a block scalar that keeps
// its trailing newlines ("|+") before the blank lines could become part of
// it.
func alignKey(b []byte, start int64) []byte {
	crosses := func() bool {
		off := start + int64(len(b))
		return off/sectorSize != (off+keyWidth-1)/sectorSize
	}
	if !crosses() {
		return b
	}
	b = append(b, "#\n"...)
	for crosses() {
		b = append(b, '\n')
	}
	return b
}

// splitsNoRune reports whether text, written at file offset start, has a
// character start at every page boundary inside it.
func splitsNoRune(text []byte, start int64) bool {
	for p := (start/pageSize + 1) * pageSize; p < start+int64(len(text)); p += pageSize {
		if text[p-start]&0xC0 == 0x80 {
			return false
		}
	}
	return true
}

// flip hides the live session (if any) and turns the "..." line into a
// comment, which makes the text after it part of the document.
func (a *Appender) flip() error {
	if a.key < 0 {
		return a.write([]byte{'#'}, a.end)
	}
	a.hidden++
	indent := ""
	if a.items > 0 {
		indent = "    " // a field of the last interaction
	}
	hide := padLine(fmt.Sprintf("%sx%08x: |", indent, a.hidden))
	if a.key/sectorSize == a.end/sectorSize && len(a.tail) > 0 {
		// One sector: one write, which neither a kill nor a crash can
		// split.
		b := bytes.Clone(a.tail)
		copy(b, hide)
		b[len(b)-len(endLine)] = '#'
		return a.write(b[:len(b)-len(endLine)+1], a.key)
	}
	if err := a.write(hide, a.key); err != nil {
		return err
	}
	return a.write([]byte{'#'}, a.end)
}

// Rewrite replaces the file atomically with the given interactions and
// session in the working layout, and goes on appending after them: the way
// to put interactions in an order appending cannot give, or to recover
// after a failed save. Items given by span are copied from the file being
// replaced. It returns where each item is in the new file.
func (a *Appender) Rewrite(items []Text, s *Session) ([]Span, error) {
	var sess []byte
	if s != nil {
		var err error
		if sess, err = a.cache.liveSession(s); err != nil {
			return nil, fmt.Errorf("cassette: %w", err)
		}
		// liveSession's buffer is reused by the next save; fill and
		// the tail below keep this one.
		sess = bytes.Clone(sess)
	}
	src, done, err := a.source(items)
	if err != nil {
		return nil, err
	}
	defer done()
	spans := make([]Span, len(items))
	key, size := int64(-1), int64(0)
	fill := func(w io.Writer) error {
		cw := &countWriter{w: w}
		io.WriteString(cw, headerText) //nolint:errcheck // the buffer's error comes back with Flush
		if len(items) > 0 {
			io.WriteString(cw, listKey) //nolint:errcheck // as above
		}
		buf := make([]byte, 64<<10)
		for i, it := range items {
			var err error
			if spans[i], err = a.copyItem(cw, src, it, cw.n, buf); err != nil {
				return err
			}
		}
		if sess != nil {
			cw.Write(alignKey(nil, cw.n)) //nolint:errcheck // as above
			key = cw.n
			cw.Write(sess) //nolint:errcheck // as above
		}
		io.WriteString(cw, endLine) //nolint:errcheck // as above
		size = cw.n
		return nil
	}
	if err := a.replaceWith(fill); err != nil {
		return nil, fmt.Errorf("cassette: %w", err)
	}
	a.items = len(items)
	a.end = size - int64(len(endLine))
	a.alloc = size
	a.key, a.tail = -1, a.tail[:0]
	if key >= 0 {
		a.key = key
		if a.key/sectorSize == a.end/sectorSize {
			a.tail = append(append(a.tail, sess...), endLine...)
		}
	}
	a.reserve(true) //nolint:errcheck // only a speed-up
	return spans, nil
}

// NewAppender is an appender for path that has written nothing: its first
// save must be Rewrite (or Close), which replaces whatever is at path.
func NewAppender(path string) *Appender { return &Appender{path: path, key: -1} }

// Close writes the finished cassette atomically in the plain layout
// (exactly what Marshal gives for these interactions and session) and
// closes the file. The appender cannot be used after.
//
// When the file being replaced is the one this appender wrote, Close
// makes that file durable (nothing to do when its saves were synced
// already) and then the new one, but not the rename: an OS crash after
// Close leaves either cassette, each holding everything, the working
// layout or the plain one. A directory sync would cost as much again, on
// the path of every recording's exit. Replacing a file it did not write
// (another recording), it syncs the directory too.
//
// Items given by span are copied from the file being replaced; Close
// returns where each item is in the finished file (which an appender for
// the same path reads them back from: NewAppender(path).ReadItem).
func (a *Appender) Close(items []Text, s *Session) ([]Span, error) {
	var sess []byte
	if s != nil {
		var err error
		if sess, err = sessionText(s); err != nil {
			return nil, fmt.Errorf("cassette: %w", err)
		}
	}
	src, done, err := a.source(items)
	if err != nil {
		return nil, errors.Join(err, a.Abandon())
	}
	defer done()
	// Written in pieces, never whole in memory.
	spans := make([]Span, len(items))
	fill := func(w io.Writer) error {
		cw := &countWriter{w: w}
		head := headerText + "interactions: []\n"
		if len(items) > 0 {
			head = headerText + listKey
		}
		io.WriteString(cw, head) //nolint:errcheck // the buffer's error comes back with Flush
		buf := make([]byte, 64<<10)
		for i, it := range items {
			var err error
			if spans[i], err = a.copyItem(cw, src, it, cw.n, buf); err != nil {
				return err
			}
		}
		_, err := cw.Write(sess)
		return err
	}
	if a.f == nil {
		err = atomicfile.WriteWith(a.path, filePerm, fill)
	} else {
		// The file written so far is made durable while the new one is
		// written and synced, not before: the two syncs overlap (often
		// one journal commit), and the rename waits for both.
		own := make(chan error, 1)
		go func() { own <- fdatasync(a.f) }()
		err = a.replaceOwn(fill, own)
	}
	err = errors.Join(err, a.Abandon())
	if err != nil {
		return nil, fmt.Errorf("cassette: %w", err)
	}
	return spans, nil
}

// replaceOwn puts what fill writes at the path, durably, in place of the
// file this appender wrote: a new file synced and renamed over it once own
// (the sync of the file replaced, run meanwhile) has come back without an
// error. It always waits for own.
func (a *Appender) replaceOwn(fill func(w io.Writer) error, own <-chan error) error {
	dir, base := filepath.Split(a.path)
	if dir == "" {
		dir = "."
	}
	tmp, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return errors.Join(err, <-own)
	}
	defer os.Remove(tmp.Name()) // a no-op once renamed
	cherr := tmp.Chmod(filePerm)
	werr := atomicfile.Fill(tmp, fill)
	serr := fdatasync(tmp)
	cerr := tmp.Close()
	if err := errors.Join(cherr, werr, serr, cerr, <-own); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), a.path)
}

// Abandon closes the file as it stands (every completed save is in it).
func (a *Appender) Abandon() error {
	if a.f == nil {
		return nil
	}
	return a.setFile(nil)
}
