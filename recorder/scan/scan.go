// Package scan finds secrets in recordings that a scrubber missed: the
// key formats of the vendors openmax speaks (OpenAI, Anthropic, Google,
// AWS access key ids and SigV4 signatures, session tokens), bearer and
// basic credentials, cookies, JWTs, private keys, the values of the
// headers, query parameters and fields the recorder scrubs, and
// random-looking tokens in headers, query values and JSON strings. It is
// what `openmax cassette scan` runs, in CI or as a pre-commit hook.
//
// A cassette (any YAML recording with an interactions list: openmax's,
// go-vcr's, vcrpy's) is read with yaml.v3's node tree, so every finding
// has the line it is on; bodies are decoded first (base64 !!binary, gzip
// and deflate, bounded by MaxBody) and read as what they are: JSON, SSE
// events whose data is JSON, AWS eventstream frames whose payloads are
// JSON, form fields, or text. Other YAML is scanned as text values with
// the named rules, and any other file as text, line by line, with the
// named rules and the secret headers of HTTP dumps (httprr).
//
// A finding never holds the secret: only its first characters (Redact)
// and a fingerprint (Fingerprint) an allowlist can name. It imports the
// recorder for the scrubber's notion of a secret header and parameter, so
// what the recorder scrubs and what scan looks for stay one list.
package scan

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"sort"
	"strings"
	"sync"

	"gopkg.in/yaml.v3"

	"github.com/openmax/openmax/provider/codec"
	_ "github.com/openmax/openmax/provider/vendors" // every wire's secret header and query names
	"github.com/openmax/openmax/recorder"
)

// MaxBody is the most bytes a body is decoded to (gzip, deflate) and the
// largest body read: past it the body is a Problem, not scanned.
const MaxBody = recorder.MaxDecodedBody

// MaxFindings is the most findings listed for one file: past it, a file
// is a Problem saying so (and costs no more time or output).
const MaxFindings = 1000

// MaxYAML is the largest file read as YAML: a bigger one is read as text,
// streaming, so memory stays bounded whatever its size.
const MaxYAML = 64 << 20

// Finding is one secret found.
type Finding struct {
	File string `json:"file"`
	Line int    `json:"line"`
	Rule string `json:"rule"`
	// Interaction is the index of the interaction it is in, or -1.
	Interaction int `json:"interaction"`
	// Where says in what: "request header Authorization", "response body
	// event 3 $.delta.text", "request url query key", a YAML path.
	Where string `json:"where"`
	// Secret is the secret redacted (Redact): its first characters only.
	Secret string `json:"secret"`
	// Fingerprint names the value for an allowlist (RULE:HEX).
	Fingerprint string `json:"fingerprint"`
}

// String is the finding as one line of output.
func (f Finding) String() string {
	in := ""
	if f.Interaction >= 0 {
		in = fmt.Sprintf("interaction %d, ", f.Interaction)
	}
	return fmt.Sprintf("%s:%d: %s: %s%s: %s (%s)", f.File, f.Line, f.Rule, in, f.Where, f.Secret, f.Fingerprint)
}

// Problem is a part of a file scan could not read (a body over MaxBody, a
// content coding it cannot undo, a file that is not well-formed YAML):
// scan cannot vouch for it.
type Problem struct {
	File    string `json:"file"`
	Line    int    `json:"line,omitempty"`
	Message string `json:"message"`
}

func (p Problem) String() string {
	if p.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", p.File, p.Line, p.Message)
	}
	return fmt.Sprintf("%s: %s", p.File, p.Message)
}

// Result is what scanning one file found.
type Result struct {
	File string `json:"file"`
	// Kind is how it was read: "cassette" (YAML with an interactions
	// list), "yaml" (other YAML, its values as text) or "text".
	Kind     string    `json:"kind"`
	Bytes    int64     `json:"bytes"`
	Findings []Finding `json:"findings"`
	Problems []Problem `json:"problems"`
}

// Options tune a scan. The zero value scans with the defaults and no
// allowlist beyond Builtin.
type Options struct {
	// Allow is applied beside Builtin.
	Allow *Allowlist
	// MaxBody and MaxYAML replace the constants when positive (tests).
	MaxBody int64
	MaxYAML int64
}

func (o Options) maxBody() int64 {
	if o.MaxBody > 0 {
		return o.MaxBody
	}
	return MaxBody
}

func (o Options) maxYAML() int64 {
	if o.MaxYAML > 0 {
		return o.MaxYAML
	}
	return MaxYAML
}

var builtin = sync.OnceValue(Builtin) // parsed on first use, not at every start of openmax

// ErrNotRegular is returned (wrapped) for a path that is not a regular
// file (a FIFO, a device, a socket): scan refuses it rather than block on
// it.
var ErrNotRegular = errors.New("not a regular file")

// File scans the file at path. The error is for a file it cannot read at
// all (missing, unreadable, not a regular file); what it read but could
// not vouch for is in the Result's Problems.
func File(path string, opt Options) (Result, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return Result{}, err
	}
	if !fi.Mode().IsRegular() {
		return Result{}, fmt.Errorf("%s: %w (%s)", path, ErrNotRegular, fi.Mode().Type())
	}
	f, err := os.Open(path)
	if err != nil {
		return Result{}, err
	}
	defer f.Close()
	// Checked again on the open file: the path may have been replaced.
	if fi, err = f.Stat(); err != nil {
		return Result{}, err
	}
	if !fi.Mode().IsRegular() {
		return Result{}, fmt.Errorf("%s: %w (%s)", path, ErrNotRegular, fi.Mode().Type())
	}
	s := newScanner(path, opt)
	if fi.Size() > opt.maxYAML() || !isYAMLName(path) {
		s.res.Kind = "text"
		n, err := s.text(f, fi.Size(), 0, place{ix: -1, where: "text"})
		s.res.Bytes = n
		if err != nil {
			return Result{}, fmt.Errorf("%s: %w", path, err)
		}
		if fi.Size() > opt.maxYAML() && isYAMLName(path) {
			s.problem(0, fmt.Sprintf("over %d MiB: read as text with the named rules only (no bodies decoded)", opt.maxYAML()>>20))
		}
		return s.result(), nil
	}
	data, err := io.ReadAll(io.LimitReader(f, opt.maxYAML()+1))
	if err != nil {
		return Result{}, fmt.Errorf("%s: %w", path, err)
	}
	return Bytes(path, data, opt), nil
}

// Bytes scans data as the YAML file name holds.
func Bytes(name string, data []byte, opt Options) Result {
	s := newScanner(name, opt)
	s.data = data
	s.res.Bytes = int64(len(data))
	s.yamlFile()
	return s.result()
}

func isYAMLName(p string) bool {
	l := strings.ToLower(p)
	return strings.HasSuffix(l, ".yaml") || strings.HasSuffix(l, ".yml")
}

// scanner scans one file.
type scanner struct {
	opt   Options
	allow *Allowlist
	res   Result
	data  []byte // the YAML file's bytes
	lines []int  // the offset of each line's start in data (lazily)
	seen  map[seenKey]bool
	over  bool // findings past MaxFindings were dropped
	// next is where locate looks next for a value in a span, so a value
	// that is there twice gets both lines.
	next map[seenKey]int
}

type seenKey struct {
	rule, value, where string
	line               int
}

// place is where values come from: an interaction (or -1), what of it,
// and the YAML lines [from, to] its text is on.
type place struct {
	ix       int
	where    string
	from, to int
	exact    bool // from is the line itself (text scans)
}

func (p place) at(where string) place { p.where = where; return p }

func newScanner(name string, opt Options) *scanner {
	return &scanner{opt: opt, allow: Merge(builtin(), opt.Allow), res: Result{File: name, Findings: []Finding{}, Problems: []Problem{}},
		seen: map[seenKey]bool{}, next: map[seenKey]int{}}
}

func (s *scanner) result() Result {
	if s.over {
		s.problem(0, fmt.Sprintf("more than %d findings: the rest are not listed", MaxFindings))
	}
	sort.SliceStable(s.res.Findings, func(i, j int) bool { return s.res.Findings[i].Line < s.res.Findings[j].Line })
	return s.res
}

func (s *scanner) problem(line int, msg string) {
	s.res.Problems = append(s.res.Problems, Problem{File: s.res.File, Line: line, Message: msg})
}

// report records value found under rule at p, unless allowed or already
// reported on the same line.
func (s *scanner) report(p place, rule, value string) {
	if s.allow.Allows(rule, value) {
		return
	}
	if len(s.res.Findings) >= MaxFindings {
		s.over = true
		return
	}
	line := p.from
	if !p.exact {
		line = s.locate(p, value)
	}
	k := seenKey{rule: rule, value: value, line: line, where: p.where}
	if s.seen[k] {
		return
	}
	s.seen[k] = true
	s.res.Findings = append(s.res.Findings, Finding{File: s.res.File, Line: line, Rule: rule, Interaction: p.ix,
		Where: p.where, Secret: Redact(value), Fingerprint: Fingerprint(rule, value)})
}

// locate finds the line of value in the YAML lines of p: the first line
// from where the last search for it in p stopped, or p.from when its text
// is not there verbatim (an escaped, folded or base64 value).
func (s *scanner) locate(p place, value string) int {
	if s.data == nil || p.from <= 0 {
		return p.from
	}
	if s.lines == nil {
		s.lines = []int{0}
		for i, c := range s.data {
			if c == '\n' {
				s.lines = append(s.lines, i+1)
			}
		}
	}
	start := s.lineStart(p.from)
	end := s.lineStart(max(p.to, p.from) + 1)
	needle := value
	if len(needle) > 24 {
		needle = needle[:24]
	}
	k := seenKey{value: needle, line: p.from}
	if n, ok := s.next[k]; ok && n > start {
		start = n
	}
	if i := bytes.Index(s.data[start:end], []byte(needle)); i >= 0 {
		s.next[k] = start + i + 1
		return sort.SearchInts(s.lines, start+i+1)
	}
	return p.from
}

func (s *scanner) lineStart(line int) int {
	if line-1 < len(s.lines) {
		return s.lines[line-1]
	}
	return len(s.data)
}

// yamlFile scans s.data as YAML: a cassette, other YAML, or text when it
// is not YAML. What follows a document end line ("...") is text the
// readers ignore but a commit keeps, so it is scanned as text.
func (s *scanner) yamlFile() {
	data := s.data
	var tail []byte
	tailLine := 0
	if i := docEnd(data); i >= 0 {
		tail = data[i:]
		tailLine = bytes.Count(data[:i], []byte("\n"))
		data = data[:i]
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	s.res.Kind = "yaml"
	for {
		var doc yaml.Node
		err := dec.Decode(&doc)
		if err == io.EOF {
			break
		}
		if err != nil {
			s.problem(0, fmt.Sprintf("not well-formed YAML (%v): scanned as text", err))
			s.res.Kind = "text"
			s.res.Findings = s.res.Findings[:0]
			s.seen = map[seenKey]bool{}
			s.text(bytes.NewReader(s.data), int64(len(s.data)), 0, place{ix: -1, where: "text"})
			return
		}
		if len(doc.Content) == 0 {
			continue
		}
		root := doc.Content[0]
		if seq := interactions(root); seq != nil {
			s.res.Kind = "cassette"
			s.cassette(root, seq)
		} else {
			s.generic(root, "", -1, endOf(root, s.lastLine()))
		}
	}
	if len(tail) > 0 {
		s.text(bytes.NewReader(tail), int64(len(tail)), tailLine, place{ix: -1, where: "after the document end"})
	}
}

// docEnd is the offset of a line "..." that ends the first YAML document
// (the recorder's working layout), or -1.
func docEnd(data []byte) int {
	if bytes.HasPrefix(data, []byte("...\n")) {
		return 0
	}
	if i := bytes.Index(data, []byte("\n...\n")); i >= 0 {
		return i + 1
	}
	if bytes.HasSuffix(data, []byte("\n...")) {
		return len(data) - 3
	}
	return -1
}

func (s *scanner) lastLine() int {
	return bytes.Count(s.data, []byte("\n")) + 1
}

// interactions returns the interactions list of a cassette's root, or nil.
func interactions(root *yaml.Node) *yaml.Node {
	if root.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(root.Content); i += 2 {
		if root.Content[i].Value == "interactions" && root.Content[i+1].Kind == yaml.SequenceNode {
			return root.Content[i+1]
		}
	}
	return nil
}

// endOf is the last line of n's text, as well as the node tree tells:
// the line of its last descendant, or end when it has none.
func endOf(n *yaml.Node, end int) int {
	last := n
	for len(last.Content) > 0 {
		last = last.Content[len(last.Content)-1]
	}
	if last.Line > n.Line {
		return max(end, last.Line)
	}
	return end
}

// pairs calls f for each key and value of a mapping, with the last line
// the value can be on (the line before the next key, or end).
func pairs(m *yaml.Node, end int, f func(k, v *yaml.Node, end int)) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		e := end
		if i+2 < len(m.Content) {
			e = max(m.Content[i+2].Line-1, m.Content[i+1].Line)
		}
		f(m.Content[i], m.Content[i+1], e)
	}
}

// items calls f for each item of a sequence with its last line.
func items(q *yaml.Node, end int, f func(i int, v *yaml.Node, end int)) {
	for i, v := range q.Content {
		e := end
		if i+1 < len(q.Content) {
			e = max(q.Content[i+1].Line-1, v.Line)
		}
		f(i, v, e)
	}
}

// cassette scans a recording's interactions, and its other keys (the
// session) as YAML values.
func (s *scanner) cassette(root, seq *yaml.Node) {
	pairs(root, s.lastLine(), func(k, v *yaml.Node, end int) {
		if v != seq {
			s.generic(v, k.Value, -1, end)
			return
		}
		items(seq, end, func(i int, it *yaml.Node, end int) {
			s.interaction(it, i, end)
		})
	})
}

// interaction scans one recorded exchange.
func (s *scanner) interaction(it *yaml.Node, ix int, end int) {
	if it.Kind != yaml.MappingNode {
		s.generic(it, fmt.Sprintf("interactions[%d]", ix), ix, end)
		return
	}
	var respBody []byte
	var respBodyOK bool
	var ext *yaml.Node
	var extEnd int
	pairs(it, end, func(k, v *yaml.Node, end int) {
		switch k.Value {
		case "request", "response":
			body, ok := s.message(k.Value, v, ix, end)
			if k.Value == "response" {
				respBody, respBodyOK = body, ok
			}
		case "openmax":
			ext, extEnd = v, end
		default:
			s.generic(v, k.Value, ix, end)
		}
	})
	if ext != nil {
		s.extension(ext, ix, extEnd, respBody, respBodyOK)
	}
}

// extension scans an interaction's openmax detail: its chunks are the
// response body again, cut where reads returned, so they are scanned
// only when they differ from it.
func (s *scanner) extension(m *yaml.Node, ix, end int, body []byte, bodyOK bool) {
	if m.Kind != yaml.MappingNode {
		s.generic(m, "openmax", ix, end)
		return
	}
	pairs(m, end, func(k, v *yaml.Node, e int) {
		if k.Value != "chunks" || v.Kind != yaml.SequenceNode {
			s.generic(v, "openmax."+k.Value, ix, e)
			return
		}
		var joined []byte
		for _, c := range v.Content {
			if d := field(c, "data"); d != nil {
				joined = append(joined, scalarBytes(d)...)
			}
		}
		if bodyOK && bytes.Equal(joined, body) {
			return
		}
		s.body(place{ix: ix, where: "response chunks", from: v.Line, to: e}, joined, nil)
	})
}

// field is the value of key in mapping m, or nil.
func field(m *yaml.Node, key string) *yaml.Node {
	if m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// scalarBytes is a scalar's bytes: a !!binary one decoded.
func scalarBytes(n *yaml.Node) []byte {
	if n.Kind != yaml.ScalarNode {
		return nil
	}
	if n.Tag == "!!binary" {
		if b, err := base64.StdEncoding.DecodeString(strings.Join(strings.Fields(n.Value), "")); err == nil {
			return b
		}
	}
	return []byte(n.Value)
}

// message scans a request or response: headers, URL, form, body. It
// returns the body as decoded (for the chunks) and whether it was read.
func (s *scanner) message(side string, m *yaml.Node, ix, end int) ([]byte, bool) {
	if m.Kind != yaml.MappingNode {
		s.generic(m, side, ix, end)
		return nil, false
	}
	headers := map[string][]string{}
	if h := field(m, "headers"); h != nil && h.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(h.Content); i += 2 {
			name := strings.ToLower(h.Content[i].Value)
			for _, v := range valuesOf(h.Content[i+1]) {
				headers[name] = append(headers[name], string(scalarBytes(v)))
			}
		}
	}
	var body []byte
	var bodyOK bool
	pairs(m, end, func(k, v *yaml.Node, e int) {
		p := place{ix: ix, from: v.Line, to: e}
		switch k.Value {
		case "headers":
			if v.Kind != yaml.MappingNode {
				s.generic(v, side+".headers", ix, e)
				return
			}
			pairs(v, e, func(hk, hv *yaml.Node, e int) {
				for _, one := range valuesOf(hv) {
					s.header(place{ix: ix, where: side + " header " + safeKey(hk.Value), from: one.Line, to: max(one.Line, e)}, hk.Value, string(scalarBytes(one)))
				}
			})
		case "url", "uri":
			if v.Kind == yaml.ScalarNode {
				s.url(p.at(side+" url"), v.Value)
			}
		case "form":
			if v.Kind == yaml.MappingNode {
				pairs(v, e, func(fk, fv *yaml.Node, e int) {
					for _, one := range valuesOf(fv) {
						s.param(place{ix: ix, where: side + " form " + safeKey(fk.Value), from: one.Line, to: max(one.Line, e)}, fk.Value, one.Value)
					}
				})
			}
		case "body":
			b := v
			if v.Kind == yaml.MappingNode {
				// vcrpy: body: {string: ...}
				b = field(v, "string")
				if b == nil {
					b = field(v, "base64_string")
				}
				if b == nil {
					s.generic(v, side+".body", ix, e)
					return
				}
			}
			if b.Kind != yaml.ScalarNode {
				s.generic(b, side+".body", ix, e)
				return
			}
			data := scalarBytes(b)
			if field(v, "base64_string") == b {
				if d, err := base64.StdEncoding.DecodeString(strings.Join(strings.Fields(b.Value), "")); err == nil {
					data = d
				}
			}
			body, bodyOK = s.body(place{ix: ix, where: side + " body", from: b.Line, to: e}, data, headers)
		default:
			s.generic(v, side+"."+k.Value, ix, e)
		}
	})
	return body, bodyOK
}

// valuesOf is a header's values: a list, or one scalar.
func valuesOf(n *yaml.Node) []*yaml.Node {
	switch n.Kind {
	case yaml.ScalarNode:
		return []*yaml.Node{n}
	case yaml.SequenceNode:
		var out []*yaml.Node
		for _, v := range n.Content {
			if v.Kind == yaml.ScalarNode {
				out = append(out, v)
			}
		}
		return out
	}
	return nil
}

// generic scans YAML that is not a request or response: each scalar with
// the named rules, each field named like a credential by its value.
func (s *scanner) generic(n *yaml.Node, path string, ix, end int) {
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			s.generic(c, path, ix, end)
		}
	case yaml.MappingNode:
		pairs(n, end, func(k, v *yaml.Node, e int) {
			p := joinPath(path, safeKey(k.Value))
			s.scalarText(place{ix: ix, where: p + " (key)", from: k.Line, to: k.Line}, k.Value)
			if v.Kind == yaml.ScalarNode && secretField(k.Value) {
				val := string(scalarBytes(v))
				if !placeholder(val) && credentialish(val) && len(textMatches(val)) == 0 {
					s.report(place{ix: ix, where: p, from: v.Line, to: e}, RuleSecretField, val)
				}
			}
			s.generic(v, p, ix, e)
		})
	case yaml.SequenceNode:
		items(n, end, func(i int, v *yaml.Node, e int) {
			s.generic(v, fmt.Sprintf("%s[%d]", path, i), ix, e)
		})
	case yaml.ScalarNode:
		if path == "" {
			path = "value"
		}
		s.scalarText(place{ix: ix, where: path, from: n.Line, to: end}, string(scalarBytes(n)))
	}
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// scalarText reports the named secrets in a text.
func (s *scanner) scalarText(p place, v string) {
	for _, m := range textMatches(v) {
		s.report(p, m.rule, m.value)
	}
}

// safeKey is a key as a finding's Where shows it: one that is itself
// secret-shaped, or very long, is cut.
func safeKey(k string) string {
	if len(k) > 64 || len(textMatches(k)) > 0 || highEntropy(k) {
		return Redact(k)
	}
	return k
}

// header scans one header value.
func (s *scanner) header(p place, name, v string) {
	l := strings.ToLower(name)
	named := textMatches(v)
	for _, m := range named {
		s.report(p, m.rule, m.value)
	}
	isNamed := func(x string) bool {
		for _, m := range named {
			if strings.Contains(x, m.value) || strings.Contains(m.value, x) {
				return true
			}
		}
		return false
	}
	switch l {
	case "authorization", "proxy-authorization":
		scheme, rest, _ := strings.Cut(strings.TrimSpace(v), " ")
		rest = strings.TrimSpace(rest)
		switch strings.ToLower(scheme) {
		case "bearer":
			if !placeholder(rest) && !isNamed(rest) {
				s.report(p, RuleBearer, rest)
			}
		case "basic":
			if !placeholder(rest) {
				s.report(p, RuleBasic, rest)
			}
		case "aws4-hmac-sha256":
			for _, f := range strings.Split(rest, ",") {
				k, val, _ := strings.Cut(strings.TrimSpace(f), "=")
				if k == "Signature" && !placeholder(val) {
					s.report(p, RuleAWSSigV4, val)
				}
			}
		default:
			if !placeholder(v) && credentialish(v) && !isNamed(v) {
				s.report(p, RuleAuthHeader, v)
			}
		}
	case "cookie", "set-cookie":
		crumbs := strings.Split(v, ";")
		if l == "set-cookie" {
			crumbs = crumbs[:1] // the rest are attributes
		}
		for _, c := range crumbs {
			k, val, ok := strings.Cut(strings.TrimSpace(c), "=")
			if ok && !benignCookies[strings.ToLower(k)] && !placeholder(val) && credentialish(val) && !isNamed(val) {
				s.report(p, RuleCookie, val)
			}
		}
	case "x-amz-security-token":
		if !placeholder(v) && !isNamed(v) {
			s.report(p, RuleAWSSession, v)
		}
	default:
		switch {
		case recorder.SecretHeader(name):
			if !placeholder(v) && credentialish(v) && len(named) == 0 {
				s.report(p, RuleSecretHeader, v)
			}
		case len(named) == 0 && !idName(l) && highEntropy(strings.TrimSpace(v)):
			s.report(p, RuleEntropy, strings.TrimSpace(v))
		}
	}
}

// benignCookies are cookies that authenticate nothing: Cloudflare's
// bot-management and load-balancing cookies, which every response of
// the big vendors' APIs sets, and real recordings hold.
var benignCookies = map[string]bool{"__cf_bm": true, "_cfuvid": true, "__cflb": true}

// url scans a URL: its user information, path and query.
func (s *scanner) url(p place, raw string) {
	u, err := url.Parse(raw)
	if err != nil {
		s.scalarText(p, raw)
		return
	}
	if u.User != nil {
		pw, hasPW := u.User.Password()
		name := u.User.Username()
		switch {
		case hasPW && !placeholder(pw):
			s.report(p.at(p.where+" password"), RuleURLUser, pw)
		case !hasPW && !placeholder(name) && credentialish(name):
			s.report(p.at(p.where+" user"), RuleURLUser, name)
		}
	}
	s.scalarText(p.at(p.where+" path"), u.Path)
	for _, part := range strings.Split(u.RawQuery, "&") {
		k, v, _ := strings.Cut(part, "=")
		s.param(p.at(p.where+" query "+safeKey(unescape(k))), unescape(k), unescape(v))
	}
}

func unescape(x string) string {
	if u, err := url.QueryUnescape(x); err == nil {
		return u
	}
	return x
}

// param scans a query or form parameter's value.
func (s *scanner) param(p place, name, v string) {
	named := textMatches(v)
	for _, m := range named {
		s.report(p, m.rule, m.value)
	}
	l := strings.ToLower(name)
	switch {
	case l == "x-amz-signature":
		if !placeholder(v) {
			s.report(p, RuleAWSSigV4, v)
		}
	case l == "x-amz-security-token":
		if !placeholder(v) && len(named) == 0 {
			s.report(p, RuleAWSSession, v)
		}
	case l == "x-amz-credential":
		// Its access key id is a named rule; the rest is a date and region.
	case recorder.SecretParam(name) || codec.IsSecretQuery(name):
		if !placeholder(v) && credentialish(v) && len(named) == 0 {
			s.report(p, RuleSecretQuery, v)
		}
	case len(named) == 0 && !idName(l) && highEntropy(v):
		s.report(p, RuleEntropy, v)
	}
}

// idName reports whether a header, parameter or field name names an
// identifier, a hash or a trace: random-looking but no secret.
func idName(l string) bool {
	l = strings.ToLower(l)
	for _, seg := range strings.FieldsFunc(l, func(r rune) bool { return r == '-' || r == '_' || r == '.' }) {
		if strings.HasSuffix(seg, "id") || strings.HasSuffix(seg, "ids") {
			return true // id, x-request-id, x-amz-id-2, toolUseId, item_ids
		}
	}
	for _, w := range []string{"trace", "span", "etag", "cf-ray", "hash", "digest", "sha", "checksum", "fingerprint", "nonce", "cursor", "version", "request", "project", "organization", "identifier"} {
		if strings.Contains(l, w) {
			return true
		}
	}
	return false
}

// payloadFields are JSON fields that carry opaque payloads the vendors
// send back and want returned, random by design and no credential:
// thinking signatures, encrypted reasoning, redacted thinking's data,
// the Responses API's obfuscation padding, Bedrock's padding (p) and
// base64 event bytes (read as JSON, decoded), and media as base64.
var payloadFields = map[string]bool{
	"signature": true, "thoughtsignature": true, "thought_signature": true,
	"encrypted_content": true, "encryptedcontent": true, "data": true,
	"obfuscation": true, "p": true, "bytes": true, "b64_json": true,
	"partial_image_b64": true, "audio": true, "image": true, "redactedcontent": true,
}

// secretFieldNames are the JSON and YAML field names that hold a
// credential (beside every registered wire's credential variable).
var secretFieldNames = func() map[string]bool {
	m := map[string]bool{}
	for _, n := range []string{"api_key", "apikey", "api-key", "x-api-key", "access_token", "accesstoken",
		"refresh_token", "refreshtoken", "id_token", "client_secret", "clientsecret", "secret", "secret_key",
		"secretkey", "password", "passwd", "private_key", "privatekey", "secret_access_key", "secretaccesskey",
		"session_token", "sessiontoken", "auth_token", "authtoken", "bearer_token", "authorization"} {
		m[n] = true
	}
	for _, n := range codec.CredentialEnv() {
		m[strings.ToLower(n)] = true
	}
	return m
}()

func secretField(k string) bool { return secretFieldNames[strings.ToLower(k)] }
