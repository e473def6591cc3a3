package builtin

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/openmax/openmax/core/tool"
	"github.com/openmax/openmax/provider"
)

// ---- read_file ----

type readFile struct{ p *project }

func (readFile) Spec() provider.ToolSpec {
	return provider.ToolSpec{
		Name: "read_file",
		Description: "Read a text file of the project. Lines are shown numbered like `cat -n`: the line number right-aligned in six columns, a tab, then the line " +
			"(the numbers are not part of the file: leave them out of edit_file's old_string). " +
			"Use offset and limit to read a part of a long file; output longer than the cap is cut with a note saying where to continue.",
		Schema: json.RawMessage(`{
  "type": "object",
  "properties": {
    "path": {"type": "string", "description": "The file, relative to the project root (an absolute path inside the project also works)."},
    "offset": {"type": "integer", "minimum": 1, "description": "The first line to show, counting from 1. Default 1."},
    "limit": {"type": "integer", "minimum": 1, "description": "The most lines to show. Default: to the end of the file (within the output cap)."}
  },
  "required": ["path"],
  "additionalProperties": false
}`),
	}
}

type readArgs struct {
	Path   string `json:"path"`
	Offset *int   `json:"offset"`
	Limit  *int   `json:"limit"`
}

func (t readFile) Run(ctx context.Context, raw json.RawMessage) tool.Result {
	var a readArgs
	if err := decodeArgs(raw, &a); err != nil {
		return tool.Failed("%v", err)
	}
	if a.Path == "" {
		return missing("path")
	}
	offset, limit := 1, -1
	if a.Offset != nil {
		if *a.Offset < 0 {
			return tool.Failed("argument \"offset\" must be at least 1, not %d", *a.Offset)
		}
		if *a.Offset > 0 {
			offset = *a.Offset
		}
	}
	if a.Limit != nil {
		if *a.Limit < 1 {
			return tool.Failed("argument \"limit\" must be at least 1, not %d", *a.Limit)
		}
		limit = *a.Limit
		if offset > math.MaxInt-limit {
			limit = -1 // to the end
		}
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
	f, st, err := openRegular(root, rel, a.Path)
	if err != nil {
		return tool.Failed("%v", err)
	}
	defer f.Close()

	r := bufio.NewReaderSize(f, 64<<10)
	if head, _ := r.Peek(8000); isBinary(head) {
		return tool.Failed("%s is a binary file (%d bytes); not shown", a.Path, st.Size())
	}
	out := lineCap{cap: t.p.cap}
	next := 0        // the first line not shown in full, once the cap is reached
	cutLine := false // next is a line longer than the cap, shown cut
	lines := 0
	for limit < 0 || lines < offset+limit-1 {
		if lines%1024 == 0 && ctx.Err() != nil {
			return tool.Failed("cancelled")
		}
		line, n, ok, err := nextLine(r, t.p.cap)
		if err != nil {
			return tool.Failed("reading %s: %v", a.Path, err)
		}
		if !ok {
			break
		}
		lines++
		if lines < offset {
			continue
		}
		first := out.buf.Len() == 0
		shown := out.add(fmt.Sprintf("%6d\t", lines) + string(line) + "\n")
		out.count(n - len(line))
		if !shown && next == 0 {
			next, cutLine = lines, first
		}
	}
	if offset > 1 && lines < offset {
		return tool.Failed("offset %d is past the end of %s (%d lines)", offset, a.Path, lines)
	}
	if lines == 0 {
		return tool.Result{OK: true, Output: "(empty file)"}
	}
	extra := ""
	switch {
	case cutLine:
		extra = fmt.Sprintf("line %d alone is longer than the cap; continue with offset=%d", next, next+1)
	case next > 0:
		extra = "continue with offset=" + strconv.Itoa(next)
	}
	return tool.Result{OK: true, Output: text(out.String(extra))}
}

// fileError words a file system error for the model.
func fileError(arg string, err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%s does not exist", arg)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("%s: permission denied", arg)
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return fmt.Errorf("%s: %v", arg, err)
}

// nextLine reads one line, without its "\n", keeping at most keep bytes of
// it; n is the line's whole length. ok is false at the end of the input.
func nextLine(r *bufio.Reader, keep int) (line []byte, n int, ok bool, err error) {
	for {
		chunk, err := r.ReadSlice('\n')
		data := chunk
		if err == nil {
			data = chunk[:len(chunk)-1]
		}
		n += len(data)
		if room := keep - len(line); room > 0 {
			line = append(line, data[:min(room, len(data))]...)
		}
		switch {
		case err == nil:
			return line, n, true, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			return line, n, n > 0, nil
		default:
			return nil, 0, false, err
		}
	}
}

// ---- list_files ----

type listFiles struct{ p *project }

func (listFiles) Spec() provider.ToolSpec {
	return provider.ToolSpec{
		Name: "list_files",
		Description: "List the files and directories of the project (recursively), sorted, one path per line relative to the project root, directories ending in /. " +
			".git directories are skipped and symbolic links are listed but not followed. " + globSyntax,
		Schema: json.RawMessage(`{
  "type": "object",
  "properties": {
    "pattern": {"type": "string", "description": "Only list paths matching this glob, matched against the path relative to the listed directory. Default: everything."},
    "path": {"type": "string", "description": "The directory to list, relative to the project root. Default: the project root."}
  },
  "additionalProperties": false
}`),
	}
}

type listArgs struct {
	Pattern string `json:"pattern"`
	Path    string `json:"path"`
}

func (t listFiles) Run(ctx context.Context, raw json.RawMessage) tool.Result {
	var a listArgs
	if err := decodeArgs(raw, &a); err != nil {
		return tool.Failed("%v", err)
	}
	var g *glob
	if a.Pattern != "" {
		var err error
		if g, err = compileGlob("pattern", a.Pattern); err != nil {
			return tool.Failed("%v", err)
		}
	}
	root, start, err := t.p.openTree(a.Path)
	if err != nil {
		return tool.Failed("%v", err)
	}
	defer root.Close()
	var paths []string
	err = walk(ctx, root, start, func(p string, d fs.DirEntry) {
		if g != nil && !g.match(relTo(start, p), d.IsDir()) {
			return
		}
		if d.IsDir() {
			p += "/"
		}
		paths = append(paths, p)
	})
	if err != nil {
		return tool.Failed("%v", fileError(orDot(a.Path), err))
	}
	if len(paths) == 0 {
		return tool.Result{OK: true, Output: "(no matches)"}
	}
	sort.Strings(paths)
	out := lineCap{cap: t.p.cap}
	for _, p := range paths {
		out.add(p + "\n")
	}
	return tool.Result{OK: true, Output: text(out.String(""))}
}

// walk calls fn for every entry under start (a slash path in root; a file
// is its own only entry), skipping .git and unreadable directories and not
// following symbolic links. The start directory itself is not reported.
func walk(ctx context.Context, root *os.Root, start string, fn func(p string, d fs.DirEntry)) error {
	fsys := root.FS()
	st, err := fs.Stat(fsys, start)
	if err != nil {
		return err
	}
	if !st.IsDir() {
		fn(start, fs.FileInfoToDirEntry(st))
		return nil
	}
	n := 0
	return fs.WalkDir(fsys, start, func(p string, d fs.DirEntry, err error) error {
		if n++; n%256 == 0 && ctx.Err() != nil {
			return errors.New("cancelled")
		}
		if err != nil {
			if p == start {
				return err
			}
			return nil // an unreadable entry: skip it
		}
		if p == start {
			return nil
		}
		if d.Name() == ".git" {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		fn(p, d)
		return nil
	})
}

// relTo returns the slash path p relative to the directory start.
func relTo(start, p string) string {
	if start == "." {
		return p
	}
	if r, ok := strings.CutPrefix(p, start+"/"); ok {
		return r
	}
	return path.Base(p) // p is start itself, a file
}

// ---- search ----

const (
	searchLineCap  = 500
	searchFileSize = 16 << 20
)

// readForSearch reads the file p for search: false for what search skips
// (anything that is not a regular file once opened, without blocking, and
// files over searchFileSize).
func readForSearch(root *os.Root, p string) ([]byte, bool) {
	f, st, err := openRegular(root, p, p)
	if err != nil || st.Size() > searchFileSize {
		if f != nil {
			f.Close()
		}
		return nil, false
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, searchFileSize+1))
	if err != nil || len(data) > searchFileSize {
		return nil, false
	}
	return data, true
}

type search struct{ p *project }

func (search) Spec() provider.ToolSpec {
	return provider.ToolSpec{
		Name: "search",
		Description: "Search the project's text files for a regular expression (Go RE2 syntax, matched line by line; (?i) for case-insensitive). " +
			"Prints one line per match as \"path:line: text\", the path relative to the project root, lines sorted by path then line number, long lines cut at " +
			strconv.Itoa(searchLineCap) + " bytes. Binary files, files over 16 MiB, .git directories and symbolic links are skipped. " + globSyntax,
		Schema: json.RawMessage(`{
  "type": "object",
  "properties": {
    "pattern": {"type": "string", "description": "The regular expression (Go RE2 syntax)."},
    "path": {"type": "string", "description": "A directory to search under, or one file to search, relative to the project root. Default: the project root."},
    "glob": {"type": "string", "description": "Only search files matching this glob, e.g. \"*.go\" or \"src/**/*.{ts,tsx}\"."}
  },
  "required": ["pattern"],
  "additionalProperties": false
}`),
	}
}

type searchArgs struct {
	Pattern string `json:"pattern"`
	Path    string `json:"path"`
	Glob    string `json:"glob"`
}

func (t search) Run(ctx context.Context, raw json.RawMessage) tool.Result {
	var a searchArgs
	if err := decodeArgs(raw, &a); err != nil {
		return tool.Failed("%v", err)
	}
	if a.Pattern == "" {
		return missing("pattern")
	}
	re, err := regexp.Compile(a.Pattern)
	if err != nil {
		return tool.Failed("argument \"pattern\" is not a valid regular expression: %v", err)
	}
	var g *glob
	if a.Glob != "" {
		if g, err = compileGlob("glob", a.Glob); err != nil {
			return tool.Failed("%v", err)
		}
	}
	root, start, err := t.p.openTree(a.Path)
	if err != nil {
		return tool.Failed("%v", err)
	}
	defer root.Close()
	var files []string
	err = walk(ctx, root, start, func(p string, d fs.DirEntry) {
		if !d.Type().IsRegular() {
			return // directories, symbolic links, special files
		}
		if g != nil && p != start && !g.match(relTo(start, p), false) {
			return
		}
		files = append(files, p)
	})
	if err != nil {
		return tool.Failed("%v", fileError(orDot(a.Path), err))
	}
	sort.Strings(files)
	out := lineCap{cap: t.p.cap}
	matches := 0
	for _, f := range files {
		if ctx.Err() != nil {
			return tool.Failed("cancelled")
		}
		data, ok := readForSearch(root, f)
		if !ok || isBinary(data) {
			continue
		}
		for n := 1; len(data) > 0; n++ {
			line := data
			if i := bytes.IndexByte(data, '\n'); i >= 0 {
				line, data = data[:i], data[i+1:]
			} else {
				data = nil
			}
			if !re.Match(line) {
				continue
			}
			matches++
			line = bytes.TrimSuffix(line, []byte("\r"))
			shown := string(line)
			if len(shown) > searchLineCap {
				shown = cutUTF8(shown, searchLineCap) + " [line cut]"
			}
			out.add(f + ":" + strconv.Itoa(n) + ": " + shown + "\n")
		}
	}
	if matches == 0 {
		return tool.Result{OK: true, Output: "(no matches)"}
	}
	return tool.Result{OK: true, Output: text(out.String(""))}
}
