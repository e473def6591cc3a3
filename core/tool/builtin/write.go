package builtin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"

	"github.com/openmax/openmax/core/tool"
	"github.com/openmax/openmax/provider"
)

// ---- write_file ----

type writeFile struct{ p *project }

// Mutating reports true: write_file changes files.
func (writeFile) Mutating() bool { return true }

func (writeFile) Spec() provider.ToolSpec {
	return provider.ToolSpec{
		Name: "write_file",
		Description: "Create a file of the project or replace its whole content, creating missing parent directories. " +
			"Prefer edit_file to change part of an existing file.",
		Schema: json.RawMessage(`{
  "type": "object",
  "properties": {
    "path": {"type": "string", "description": "The file, relative to the project root."},
    "content": {"type": "string", "description": "The complete new content of the file."}
  },
  "required": ["path", "content"],
  "additionalProperties": false
}`),
	}
}

type writeArgs struct {
	Path    string  `json:"path"`
	Content *string `json:"content"`
}

func (t writeFile) Run(ctx context.Context, raw json.RawMessage) tool.Result {
	var a writeArgs
	if err := decodeArgs(raw, &a); err != nil {
		return tool.Failed("%v", err)
	}
	if a.Path == "" {
		return missing("path")
	}
	if a.Content == nil {
		return missing("content")
	}
	if ctx.Err() != nil {
		return tool.Failed("cancelled")
	}
	rel, err := t.p.resolve(a.Path)
	if err != nil {
		return tool.Failed("%v", err)
	}
	root, err := t.p.openRoot()
	if err != nil {
		return tool.Failed("%v", err)
	}
	defer root.Close()
	f, st, existed, err := openForWrite(root, rel, a.Path, true)
	if err != nil {
		return tool.Failed("%v", err)
	}
	defer f.Close()
	content := *a.Content
	newSide := heldSide(content)
	var old side
	if existed {
		if old, err = readOld(f, st, content); err != nil {
			return tool.Failed("reading %s: %v", a.Path, unwrapPath(err))
		}
	}
	if err := replaceContent(f, content); err != nil {
		return tool.Failed("writing %s: %v", a.Path, unwrapPath(err))
	}
	d, changed := t.p.fileDiff(rel, old, newSide, existed)
	verb := "wrote"
	if !existed {
		verb = "created"
	}
	res := tool.Result{OK: true}
	if changed {
		res.Diffs = []tool.FileDiff{d}
		res.Output = fmt.Sprintf("%s %s (%d bytes, +%d -%d lines)", verb, d.Path, len(content), d.Added, d.Removed)
	} else {
		res.Output = fmt.Sprintf("%s %s (%d bytes, unchanged)", verb, slashRel(rel), len(content))
	}
	return res
}

// side is one side of a change: its content when it is small enough to
// diff (at most MaxEditFileSize), else only its size and line count.
type side struct {
	text  string
	held  bool
	size  int64
	lines int
	// same reports, for an old side not held, that it equals the new
	// content.
	same bool
}

// heldSide is the side for content in memory; content over
// MaxEditFileSize is not diffed.
func heldSide(content string) side {
	if len(content) > MaxEditFileSize {
		return side{size: int64(len(content)), lines: lineCount(content)}
	}
	return side{text: content, held: true, size: int64(len(content))}
}

// lineCount counts content's lines as splitLines splits them, without
// splitting.
func lineCount(content string) int {
	n := strings.Count(content, "\n")
	if content != "" && !strings.HasSuffix(content, "\n") {
		n++
	}
	return n
}

// readOld reads the current content of the file f (described by st) that
// a write is about to replace with content. A file over MaxEditFileSize is
// streamed, never held: only its lines are counted and it is compared with
// content.
func readOld(f *os.File, st fs.FileInfo, content string) (side, error) {
	if st.Size() <= MaxEditFileSize {
		text, over, err := readUpTo(f, st.Size(), MaxEditFileSize)
		if err != nil {
			return side{}, err
		}
		if !over {
			return side{text: text, held: true, size: int64(len(text))}, nil
		}
		// It grew meanwhile: stream it after all.
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return side{}, err
		}
	}
	cw := &compareWriter{want: content, same: true}
	lines, err := countLines(io.TeeReader(f, cw))
	if err != nil {
		return side{}, err
	}
	return side{size: cw.n, lines: lines, same: cw.same && cw.n == int64(len(content))}, nil
}

// compareWriter compares what is written to it with want.
type compareWriter struct {
	want string
	n    int64
	same bool
}

func (w *compareWriter) Write(p []byte) (int, error) {
	if w.same {
		rest := w.want[min(w.n, int64(len(w.want))):]
		w.same = len(p) <= len(rest) && rest[:len(p)] == string(p)
	}
	w.n += int64(len(p))
	return len(p), nil
}

// replaceContent makes content the whole of the opened file f.
func replaceContent(f *os.File, content string) error {
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	if _, err := io.WriteString(f, content); err != nil {
		return err
	}
	if err := f.Truncate(int64(len(content))); err != nil {
		return err
	}
	return f.Close()
}

// fileDiff is the diff event of a change of the file rel, and whether
// anything changed. A binary side gets a one-line notice instead of hunks,
// and so does a side too big to diff (with the line counts); the diff is
// cut at the project's diff cap, with a note.
func (p *project) fileDiff(rel string, old, new side, existed bool) (tool.FileDiff, bool) {
	name := slashRel(rel)
	from := "a/" + name
	if !existed {
		from = "/dev/null"
	}
	to := "b/" + name
	if existed && (old.held && new.held && old.text == new.text || !old.held && old.same) {
		return tool.FileDiff{}, false
	}
	head := "--- " + from + "\n+++ " + to + "\n"
	if !old.held && existed || !new.held {
		if old.held {
			old.lines = lineCount(old.text)
		}
		if new.held {
			new.lines = lineCount(new.text)
		}
		return tool.FileDiff{
			Path: name,
			Unified: head + fmt.Sprintf("[diff not computed: the old content is %s, the new %s; contents over %s are not diffed, every old line counts as removed and every new one as added]\n",
				sizeText(old.size), sizeText(new.size), sizeText(MaxEditFileSize)),
			Added: new.lines, Removed: old.lines,
		}, true
	}
	if isBinary(old.text) || isBinary(new.text) {
		return tool.FileDiff{Path: name, Unified: fmt.Sprintf("Binary files %s and %s differ\n", from, to)}, true
	}
	u, added, removed := unifiedDiffCap(from, to, old.text, new.text, p.diffCap)
	if u == "" {
		// A new empty file: no lines, but a change all the same.
		u = head
	}
	return tool.FileDiff{Path: name, Unified: text(u), Added: added, Removed: removed}, true
}

// unwrapPath drops the path an *fs.PathError repeats (the model named it).
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// ---- edit_file ----

type editFile struct{ p *project }

// Mutating reports true: edit_file changes files.
func (editFile) Mutating() bool { return true }

func (editFile) Spec() provider.ToolSpec {
	return provider.ToolSpec{
		Name: "edit_file",
		Description: "Replace an exact piece of text in a file of the project. old_string must match the file byte for byte " +
			"(whitespace and indentation included, without read_file's line numbers) and occur exactly once, " +
			"unless replace_all is true, which replaces every occurrence. Include enough surrounding lines to make it unique.",
		Schema: json.RawMessage(`{
  "type": "object",
  "properties": {
    "path": {"type": "string", "description": "The file, relative to the project root."},
    "old_string": {"type": "string", "description": "The exact text to replace; not empty."},
    "new_string": {"type": "string", "description": "The text to put in its place (may be empty, to delete)."},
    "replace_all": {"type": "boolean", "description": "Replace every occurrence of old_string instead of requiring exactly one. Default false."}
  },
  "required": ["path", "old_string", "new_string"],
  "additionalProperties": false
}`),
	}
}

type editArgs struct {
	Path       string  `json:"path"`
	OldString  *string `json:"old_string"`
	NewString  *string `json:"new_string"`
	ReplaceAll bool    `json:"replace_all"`
}

func (t editFile) Run(ctx context.Context, raw json.RawMessage) tool.Result {
	var a editArgs
	if err := decodeArgs(raw, &a); err != nil {
		return tool.Failed("%v", err)
	}
	switch {
	case a.Path == "":
		return missing("path")
	case a.OldString == nil:
		return missing("old_string")
	case a.NewString == nil:
		return missing("new_string")
	case *a.OldString == "":
		return tool.Failed("argument \"old_string\" is empty; use write_file to create a file or replace all of it")
	case *a.OldString == *a.NewString:
		return tool.Failed("old_string and new_string are the same; nothing to change")
	}
	if ctx.Err() != nil {
		return tool.Failed("cancelled")
	}
	rel, err := t.p.resolve(a.Path)
	if err != nil {
		return tool.Failed("%v", err)
	}
	root, err := t.p.openRoot()
	if err != nil {
		return tool.Failed("%v", err)
	}
	defer root.Close()
	if _, err := root.Stat(rel); errors.Is(err, fs.ErrNotExist) {
		return tool.Failed("%s does not exist; use write_file to create it", a.Path)
	}
	f, st, _, err := openForWrite(root, rel, a.Path, false)
	if err != nil {
		return tool.Failed("%v", err)
	}
	defer f.Close()
	tooBig := tool.Failed("%s is %s, over edit_file's limit of %s; change a file this big with run_command (sed, for instance)", a.Path, sizeText(st.Size()), sizeText(MaxEditFileSize))
	if st.Size() > MaxEditFileSize {
		return tooBig
	}
	old, over, err := readUpTo(f, st.Size(), MaxEditFileSize)
	switch {
	case err != nil:
		return tool.Failed("reading %s: %v", a.Path, unwrapPath(err))
	case over:
		return tooBig
	}
	n := strings.Count(old, *a.OldString)
	switch {
	case n == 0:
		return tool.Failed("old_string was not found in %s", a.Path)
	case n > 1 && !a.ReplaceAll:
		return tool.Failed("old_string occurs %d times in %s; include more surrounding text to make it unique, or set replace_all to replace every occurrence", n, a.Path)
	}
	content := strings.Replace(old, *a.OldString, *a.NewString, -1)
	if err := replaceContent(f, content); err != nil {
		return tool.Failed("writing %s: %v", a.Path, unwrapPath(err))
	}
	d, changed := t.p.fileDiff(rel, side{text: old, held: true}, heldSide(content), true)
	what := "1 occurrence"
	if n > 1 {
		what = fmt.Sprintf("%d occurrences", n)
	}
	res := tool.Result{
		OK:     true,
		Output: fmt.Sprintf("edited %s: replaced %s (+%d -%d lines)", slashRel(rel), what, d.Added, d.Removed),
	}
	if changed {
		res.Diffs = []tool.FileDiff{d}
	}
	return res
}
