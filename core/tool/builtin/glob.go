package builtin

import (
	"fmt"
	"path"
	"strings"
)

// globSyntax documents the glob patterns of list_files and search.
const globSyntax = `Glob syntax: * ? [...] match within one path segment, ** matches any number of segments, {a,b} alternatives. ` +
	`A pattern without a slash matches file names at any depth (like ripgrep's --glob: "*.go"); ` +
	`a pattern with a slash matches the whole path relative to the listed directory ("cmd/*/main.go", "**/testdata/**"); ` +
	`a trailing slash matches directories only.`

const maxBraceAlternatives = 256

// glob is a compiled pattern: a set of alternatives after brace expansion.
type glob struct {
	alts []globAlt
}

type globAlt struct {
	segs    []string // slash-separated segments, "**" among them
	base    bool     // match the base name only
	dirOnly bool
}

// compileGlob checks and compiles pattern; name is the argument it came
// from, for errors.
func compileGlob(name, pattern string) (*glob, error) {
	alts := expandBraces(pattern)
	if len(alts) > maxBraceAlternatives {
		return nil, fmt.Errorf("argument %q: glob %q expands to more than %d alternatives", name, pattern, maxBraceAlternatives)
	}
	g := &glob{}
	for _, a := range alts {
		var ga globAlt
		for strings.HasPrefix(a, "./") {
			a = a[2:]
		}
		a = strings.TrimLeft(a, "/")
		if strings.HasSuffix(a, "/") {
			ga.dirOnly = true
			a = strings.TrimRight(a, "/")
		}
		if a == "" {
			return nil, fmt.Errorf("argument %q: glob %q is empty", name, pattern)
		}
		ga.base = !strings.Contains(a, "/")
		for _, s := range strings.Split(a, "/") {
			if s == "" || s == "." {
				continue
			}
			if _, err := path.Match(s, ""); err != nil {
				return nil, fmt.Errorf("argument %q: %q is not a valid glob: %v", name, pattern, err)
			}
			ga.segs = append(ga.segs, s)
		}
		if len(ga.segs) == 0 {
			return nil, fmt.Errorf("argument %q: glob %q matches nothing", name, pattern)
		}
		g.alts = append(g.alts, ga)
	}
	return g, nil
}

// match reports whether the slash-separated relative path rel matches.
func (g *glob) match(rel string, isDir bool) bool {
	for _, a := range g.alts {
		if a.dirOnly && !isDir {
			continue
		}
		if a.base {
			if a.segs[0] == "**" {
				return true
			}
			if ok, _ := path.Match(a.segs[0], path.Base(rel)); ok {
				return true
			}
			continue
		}
		if matchSegs(a.segs, strings.Split(rel, "/")) {
			return true
		}
	}
	return false
}

func matchSegs(pat, segs []string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			for len(pat) > 1 && pat[1] == "**" {
				pat = pat[1:]
			}
			for i := 0; i <= len(segs); i++ {
				if matchSegs(pat[1:], segs[i:]) {
					return true
				}
			}
			return false
		}
		if len(segs) == 0 {
			return false
		}
		if ok, _ := path.Match(pat[0], segs[0]); !ok {
			return false
		}
		pat, segs = pat[1:], segs[1:]
	}
	return len(segs) == 0
}

// expandBraces expands {a,b} alternatives, nested ones included. A brace
// group without a comma is literal.
func expandBraces(p string) []string {
	depth, start := 0, -1
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case '\\':
			i++
		case '{':
			if depth == 0 {
				start = i
			}
			depth++
		case '}':
			if depth == 0 {
				continue
			}
			depth--
			if depth > 0 {
				continue
			}
			alts := splitTopLevel(p[start+1 : i])
			if len(alts) < 2 {
				continue
			}
			var out []string
			for _, a := range alts {
				out = append(out, expandBraces(p[:start]+a+p[i+1:])...)
				if len(out) > maxBraceAlternatives {
					return out
				}
			}
			return out
		}
	}
	return []string{p}
}

// splitTopLevel splits s on the commas outside nested braces.
func splitTopLevel(s string) []string {
	var out []string
	depth, from := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '{':
			depth++
		case '}':
			if depth > 0 {
				depth--
			}
		case ',':
			if depth == 0 {
				out = append(out, s[from:i])
				from = i + 1
			}
		}
	}
	return append(out, s[from:])
}
