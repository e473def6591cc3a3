package builtin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
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
	old, existed, err := readForWrite(root, rel, a.Path)
	if err != nil {
		return tool.Failed("%v", err)
	}
	if dir := filepath.Dir(rel); dir != "." {
		if err := root.MkdirAll(dir, 0o755); err != nil {
			return tool.Failed("creating the directories of %s: %v", a.Path, unwrapPath(err))
		}
	}
	if err := root.WriteFile(rel, []byte(*a.Content), 0o644); err != nil {
		return tool.Failed("writing %s: %v", a.Path, unwrapPath(err))
	}
	d, changed := fileDiff(rel, old, *a.Content, existed)
	verb := "wrote"
	if !existed {
		verb = "created"
	}
	res := tool.Result{OK: true}
	if changed {
		res.Diffs = []tool.FileDiff{d}
		res.Output = fmt.Sprintf("%s %s (%d bytes, +%d -%d lines)", verb, d.Path, len(*a.Content), d.Added, d.Removed)
	} else {
		res.Output = fmt.Sprintf("%s %s (%d bytes, unchanged)", verb, slashRel(rel), len(*a.Content))
	}
	return res
}

// readForWrite returns the current content of the file a write will
// replace, refusing directories and special files.
func readForWrite(root *os.Root, rel, arg string) (content string, existed bool, err error) {
	st, err := root.Stat(rel)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", false, nil
	case err != nil:
		return "", false, fileError(arg, err)
	case st.IsDir():
		return "", false, fmt.Errorf("%s is a directory", arg)
	case !st.Mode().IsRegular():
		return "", false, fmt.Errorf("%s is not a regular file", arg)
	}
	data, err := root.ReadFile(rel)
	if err != nil {
		return "", false, fileError(arg, err)
	}
	return string(data), true, nil
}

// fileDiff is the diff event of a change of the file rel, and whether
// anything changed. A binary side gets a one-line notice instead of hunks.
func fileDiff(rel, old, new string, existed bool) (tool.FileDiff, bool) {
	name := slashRel(rel)
	from := "a/" + name
	if !existed {
		from = "/dev/null"
	}
	to := "b/" + name
	if existed && old == new {
		return tool.FileDiff{}, false
	}
	if isBinary([]byte(old)) || isBinary([]byte(new)) {
		return tool.FileDiff{Path: name, Unified: fmt.Sprintf("Binary files %s and %s differ\n", from, to)}, true
	}
	u, added, removed := unifiedDiff(from, to, old, new)
	if u == "" {
		// A new empty file: no lines, but a change all the same.
		u = "--- " + from + "\n+++ " + to + "\n"
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
	old, existed, err := readForWrite(root, rel, a.Path)
	if err != nil {
		return tool.Failed("%v", err)
	}
	if !existed {
		return tool.Failed("%s does not exist; use write_file to create it", a.Path)
	}
	n := strings.Count(old, *a.OldString)
	switch {
	case n == 0:
		return tool.Failed("old_string was not found in %s", a.Path)
	case n > 1 && !a.ReplaceAll:
		return tool.Failed("old_string occurs %d times in %s; include more surrounding text to make it unique, or set replace_all to replace every occurrence", n, a.Path)
	}
	content := strings.Replace(old, *a.OldString, *a.NewString, -1)
	if err := root.WriteFile(rel, []byte(content), 0o644); err != nil {
		return tool.Failed("writing %s: %v", a.Path, unwrapPath(err))
	}
	d, changed := fileDiff(rel, old, content, true)
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
