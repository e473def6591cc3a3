package appserver

import (
	"bytes"
	"encoding/json"
	"slices"
	"sort"
	"strings"

	"github.com/openmax/openmax/internal/jsonnum"
	"github.com/openmax/openmax/provider/codex/transcript"
)

// The normalisation table (see the package doc). Matching applies it to
// the recorded and the received message alike.
var (
	// TimestampKeys are the members, at any depth, whose number values are
	// times or durations of one run: compared as "<timestamp>".
	TimestampKeys = []string{
		"emittedAtMs", "startedAtMs", "completedAtMs",
		"createdAt", "updatedAt", "recencyAt", "startedAt", "completedAt", "durationMs",
	}
	// LearnedKeys are the members, at any depth, whose string values the
	// client picks per run (a working directory, usually a temporary
	// one): the first differing value is learned as a path prefix.
	LearnedKeys = []string{"cwd"}
	// IgnoredMembers are members of one method's messages that a client
	// build fills with its own value: compared as "<ignored>". A path is
	// the member names from the message's top level.
	IgnoredMembers = []IgnoredMember{
		// The client's version: a golden transcript outlives a release.
		{Method: "initialize", Path: []string{"params", "clientInfo", "version"}},
	}
)

// IgnoredMember names a member not compared in messages of one method.
type IgnoredMember struct {
	Method string
	Path   []string
}

// Placeholders put in place of what is not compared.
const (
	placeholderID   = "<request id>"
	placeholderTime = "<timestamp>"
	placeholderIgn  = "<ignored>"
	emailKey        = "email"
)

// pathMap is the learned path prefixes, recorded → client's, longest
// recorded prefix first.
type pathMap struct {
	from, to []string
}

// apply replaces, left to right, every occurrence in s of a learned path
// that stands as a path of its own: not continuing a longer name or path
// before it, and followed by the end, a separator or a character no name
// holds (so "/r/w" is found in "cd /r/w && ls" and "/r/w/x", not in
// "/r/wx" or "/x/r/w"). Where learned paths overlap, the longest wins.
func (p *pathMap) apply(s string) (string, bool) {
	if len(p.from) == 0 {
		return s, false
	}
	var b strings.Builder
	pos := 0
	for {
		at, k := -1, -1
		for i, f := range p.from {
			if j := pathIndex(s, f, pos); j >= 0 && (at < 0 || j < at) {
				at, k = j, i // p.from is longest first: ties keep the longest
			}
		}
		if at < 0 {
			break
		}
		b.WriteString(s[pos:at])
		b.WriteString(p.to[k])
		pos = at + len(p.from[k])
	}
	if pos == 0 {
		return s, false
	}
	b.WriteString(s[pos:])
	return b.String(), true
}

// pathIndex is the first index at or after pos where path occurs in s as
// a path of its own, or -1.
func pathIndex(s, path string, pos int) int {
	for pos <= len(s)-len(path) {
		j := strings.Index(s[pos:], path)
		if j < 0 {
			return -1
		}
		j += pos
		if startsPath(s, j) && endsPath(s, j+len(path), path) {
			return j
		}
		pos = j + 1
	}
	return -1
}

// startsPath reports whether a path may start at s[i]: nothing of a name
// or a path before it.
func startsPath(s string, i int) bool {
	if i == 0 {
		return true
	}
	c := s[i-1]
	return !nameByte(c) && c != '/' && c != '\\'
}

// endsPath reports whether the path that ends at s[e] ends there, rather
// than continuing into a longer name.
func endsPath(s string, e int, path string) bool {
	if e == len(s) || strings.HasSuffix(path, "/") || strings.HasSuffix(path, `\`) {
		return true
	}
	switch c := s[e]; {
	case c == '/' || c == '\\':
		return true
	case c == '.':
		// A full stop ends a sentence; "/r/w.bak" is another name.
		return e+1 == len(s) || !nameByte(s[e+1])
	default:
		return !nameByte(c)
	}
}

// nameByte reports whether c can be part of a file name in a path as
// codex and shells print them (non-ASCII bytes included).
func nameByte(c byte) bool {
	return c >= 0x80 || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
		c == '_' || c == '-' || c == '~' || c == '.'
}

// with returns p plus the mappings in add.
func (p *pathMap) with(add map[string]string) *pathMap {
	if len(add) == 0 {
		return p
	}
	q := &pathMap{from: slices.Clone(p.from), to: slices.Clone(p.to)}
	for _, f := range sortedKeys(add) {
		q.from = append(q.from, f)
		q.to = append(q.to, add[f])
	}
	idx := make([]int, len(q.from))
	for i := range idx {
		idx[i] = i
	}
	// Longest first; equal lengths in the order learned.
	sort.SliceStable(idx, func(a, b int) bool { return len(q.from[idx[a]]) > len(q.from[idx[b]]) })
	r := &pathMap{}
	for _, i := range idx {
		r.from = append(r.from, q.from[i])
		r.to = append(r.to, q.to[i])
	}
	return r
}

func (p *pathMap) empty() bool { return len(p.from) == 0 }

// learnable reports whether a recorded value may be learned as a prefix:
// an absolute path other than the root (a relative or empty one would
// rewrite unrelated strings).
func learnable(s string) bool {
	if len(s) < 2 {
		return false
	}
	if s[0] == '/' {
		return strings.Trim(s, "/") != ""
	}
	// A Windows drive path, C:\ or C:/.
	return len(s) > 3 && s[1] == ':' && (s[2] == '\\' || s[2] == '/')
}

// learn collects, into found, the LearnedKeys values where the recorded
// message rec, with the prefixes learned so far substituted, differs from
// the received got, and the recorded value is not itself a learned prefix
// (a path learned once keeps its mapping; one under it may get its own).
func learn(rec, got any, p *pathMap, found map[string]string) {
	switch r := rec.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return
		}
		for _, k := range sortedKeys(r) {
			if slices.Contains(LearnedKeys, k) {
				rs, ok1 := r[k].(string)
				gs, ok2 := g[k].(string)
				if ok1 && ok2 && learnable(rs) && !slices.Contains(p.from, rs) {
					if now, _ := p.apply(rs); now != gs {
						if _, dup := found[rs]; !dup {
							found[rs] = gs
						}
					}
				}
				continue
			}
			learn(r[k], g[k], p, found)
		}
	case []any:
		g, ok := got.([]any)
		if !ok {
			return
		}
		for i := range min(len(r), len(g)) {
			learn(r[i], g[i], p, found)
		}
	}
}

// Normalised is a parsed message (decoded with UseNumber) as the fake
// compares it: the table applied, and every path from (when not empty)
// written as to. Tools that compare transcripts use it, so they judge as
// the fake does.
func Normalised(v any, from, to string) any {
	var p *pathMap
	if from != "" {
		p = &pathMap{from: []string{from}, to: []string{to}}
	}
	return normalise(v, p)
}

// normalise returns v with the table applied: a request's id and
// timestamps replaced by placeholders, emails redacted, and (when p is
// not nil) learned prefixes substituted in strings.
func normalise(v any, p *pathMap) any {
	m, ok := v.(map[string]any)
	if !ok {
		return norm(v, p)
	}
	n := norm(m, p).(map[string]any)
	method, hasMethod := m["method"]
	if _, hasID := m["id"]; hasID && hasMethod {
		n["id"] = placeholderID
	}
	for _, ig := range IgnoredMembers {
		if method == ig.Method {
			ignore(n, ig.Path)
		}
	}
	return n
}

// ignore puts the placeholder in place of the member at path, if any.
func ignore(m map[string]any, path []string) {
	for i, k := range path {
		v, ok := m[k]
		if !ok {
			return
		}
		if i == len(path)-1 {
			m[k] = placeholderIgn
			return
		}
		if m, ok = v.(map[string]any); !ok {
			return
		}
	}
}

func norm(v any, p *pathMap) any {
	switch x := v.(type) {
	case map[string]any:
		n := make(map[string]any, len(x))
		for k, e := range x {
			switch {
			case k == emailKey && !isContainer(e):
				n[k] = transcript.Redacted
			case slices.Contains(TimestampKeys, k) && isNumber(e):
				n[k] = placeholderTime
			default:
				n[k] = norm(e, p)
			}
		}
		return n
	case []any:
		n := make([]any, len(x))
		for i, e := range x {
			n[i] = norm(e, p)
		}
		return n
	case string:
		if p != nil {
			s, _ := p.apply(x)
			return s
		}
	case json.Number:
		// Numbers compare by value: a client that sends 1.0 where 1 was
		// recorded sent the same thing.
		return json.Number(jsonnum.Canon(string(x)))
	}
	return v
}

func isContainer(v any) bool {
	switch v.(type) {
	case map[string]any, []any:
		return true
	}
	return false
}

func isNumber(v any) bool {
	_, ok := v.(json.Number)
	return ok
}

// decode parses one JSON value keeping numbers as their literal text.
func decode(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// text renders a normalised value for a diff, one member a line, keys
// sorted.
func text(v any) []string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return []string{err.Error()}
	}
	return strings.Split(strings.TrimRight(buf.String(), "\n"), "\n")
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// rewrite returns the compact JSON msg with its top-level "id" value
// replaced by newID (when not nil) and the learned prefixes of p
// substituted in its string values (keys are left alone). Everything else
// keeps its bytes and order.
func rewrite(msg []byte, newID []byte, p *pathMap) []byte {
	if newID == nil && p.empty() {
		return msg
	}
	out := make([]byte, 0, len(msg)+32)
	var objs []bool // for each open container: is it an object
	idNext := false // the next value is the top-level "id"
	for i := 0; i < len(msg); {
		c := msg[i]
		switch {
		case c == '{' || c == '[':
			objs = append(objs, c == '{')
			idNext = false // an id that is not a scalar is left as it is
			out = append(out, c)
			i++
		case c == '}' || c == ']':
			objs = objs[:len(objs)-1]
			out = append(out, c)
			i++
		case c == '"':
			end := stringEnd(msg, i)
			tok := msg[i:end]
			switch {
			case end < len(msg) && msg[end] == ':':
				idNext = newID != nil && len(objs) == 1 && string(tok) == `"id"`
				out = append(out, tok...)
			case idNext:
				out = append(out, newID...)
				idNext = false
			default:
				out = appendString(out, tok, p)
			}
			i = end
		case idNext && c != ':':
			end := i
			for end < len(msg) && msg[end] != ',' && msg[end] != '}' && msg[end] != ']' {
				end++
			}
			out = append(out, newID...)
			idNext = false
			i = end
		default:
			out = append(out, c)
			i++
		}
	}
	return out
}

// stringEnd returns the index just past the JSON string starting at i.
func stringEnd(b []byte, i int) int {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return len(b)
}

// appendString appends the JSON string token tok, its value's learned
// prefix substituted.
func appendString(out, tok []byte, p *pathMap) []byte {
	if p.empty() {
		return append(out, tok...)
	}
	var s string
	if bytes.IndexByte(tok, '\\') < 0 {
		s = string(tok[1 : len(tok)-1])
	} else if err := json.Unmarshal(tok, &s); err != nil {
		return append(out, tok...)
	}
	ns, ok := p.apply(s)
	if !ok {
		return append(out, tok...)
	}
	return append(out, quote(ns)...)
}

// quote renders s as a JSON string without HTML escaping.
func quote(s string) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return bytes.TrimRight(buf.Bytes(), "\n")
}
