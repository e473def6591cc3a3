package replay

import (
	"github.com/openmax/openmax/internal/recache"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
)

// DefaultIgnore lists the request-body fields that known clients fill with
// a value of their own run (a session, a device, a cache key), so that a
// recording of one run never matches the next. Matching drops them from
// both bodies unless Options.NoDefaults is set; Options.Ignore adds to
// them. Paths are written as for Options.Ignore.
var DefaultIgnore = []string{
	// Anthropic Messages. claude-code puts a JSON string here holding its
	// device id (a hash kept under HOME), account uuid and session id.
	"metadata.user_id",
	// OpenAI Chat Completions and Responses. codex sends its conversation
	// id as the cache key.
	"prompt_cache_key",
	// OpenAI Responses as codex sends it: per-install and per-session
	// identifiers.
	"client_metadata",
	// OpenAI Responses input items (messages, reasoning, function calls)
	// carry ids a client may mint afresh each run; the item's content is
	// still compared.
	"input.id",
}

// Placeholders the default normalisation puts in place of volatile text
// inside JSON strings.
const (
	PlaceholderTemp = "<tmp>"
	PlaceholderHome = "<home>"
	PlaceholderUUID = "<uuid>"
	PlaceholderDate = "<date>"
	// PlaceholderChunk and PlaceholderWallTime stand for the per-run
	// values in the header codex puts on each shell tool result.
	PlaceholderChunk    = "<chunk>"
	PlaceholderWallTime = "<seconds>"
)

// codexExecMark is what every codex shell tool result holds: its header
// starts "Chunk ID: <6 hex digits>\nWall time: <seconds> seconds\n"
// before the exit code and the output. Both values change from run to run
// (a random id, the command's duration), so the rules for them run only on
// strings holding the mark.
const codexExecMark = "Wall time: "

// pathChars is what a path runs through: anything but white space, quotes
// and the punctuation that usually closes a path in prose or markup.
const pathChars = "[^\\s\"'`<>|,;()\\[\\]{}]"

// nameChars is one path segment's characters.
const nameChars = "[^\\s\"'`<>|,;()\\[\\]{}/\\\\]"

// lead is what must come before a path: the start of the string or a
// character that cannot continue a word, a path or a name (so "/work/tmp"
// keeps its /tmp).
const lead = `(^|[^\w.~/-])`

// rule replaces every match of re with its placeholder, keeping the
// leading character the match had to consume and the group named tail.
// It runs only on strings with every feature in needs.
type rule struct {
	re    *regexp.Regexp
	repl  string
	needs feature
}

// feature is what a string holds that some rule needs to match at all;
// no rule's placeholder adds one, so testing the original string is exact.
type feature uint8

const (
	hasSlash     feature = 1 << iota // a slash or a backslash
	hasDash                          // a '-'
	hasCodexExec                     // codexExecMark
)

// features is what s holds of the features.
func features(s string) feature {
	var f feature
	if strings.ContainsAny(s, `/\`) {
		f |= hasSlash
	}
	if strings.IndexByte(s, '-') >= 0 {
		f |= hasDash
	}
	if strings.Contains(s, codexExecMark) {
		f |= hasCodexExec
	}
	return f
}

func newRule(pattern, placeholder string, needs feature) rule {
	return rule{re: recache.Compile(pattern), repl: "${1}" + placeholder + "${tail}", needs: needs}
}

// dir is the pattern of a directory that must end there: a word boundary
// after a name ending in a word character ("/tmp" is not "/tmpfs").
func dir(pattern string) string {
	if c := pattern[len(pattern)-1]; c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '+' {
		return pattern + `\b`
	}
	return pattern
}

// normaliser puts placeholders in place of volatile text in strings.
//
// A session's requests carry the whole conversation so far, so the same
// strings come back in every request: str remembers what it made of each
// string that needed the rules (up to memoBytes of them), and a string
// without the characters every match needs skips the rules altogether.
type normaliser struct {
	rules []rule

	mu       sync.Mutex
	memo     map[string]string
	memoSize int
}

// memoBytes bounds what a normaliser remembers (a handler serving
// requests for a long time meets new strings for ever).
const memoBytes = 64 << 20

// defaultNormaliser is the built-in normalisation, in the order it is
// applied:
//
//  1. a path under a temporary directory (/tmp, /var/tmp, macOS's
//     /var/folders and /private/..., and this process's os.TempDir()),
//     to the end of the path, becomes <tmp>: test runs and sandboxes put
//     HOME and the working directory there, so all of it varies;
//  2. a home directory (/home/NAME, /Users/NAME, /root, C:\Users\NAME, and
//     this process's HOME) becomes <home>; the rest of the path is kept;
//  3. a UUID (8-4-4-4-12 hex digits) becomes <uuid>;
//  4. an ISO 8601 date, with its time and zone if given (2026-12-02,
//     2026-12-02T21:26:47.5Z), becomes <date>;
//  5. in the header of a codex shell tool result, a line "Chunk ID: HEX"
//     becomes "Chunk ID: <chunk>" and a line "Wall time: N seconds"
//     becomes "Wall time: <seconds> seconds" (only in strings holding
//     "Wall time: ").
//
// A path only counts where one starts: not after a letter, digit, '_',
// '.', '~', '/' or '-'. A UUID must not follow a hex digit or '-', a date
// a letter, digit, '_' or '-' (so "gpt-4o-2024-08-06" keeps its date).
func defaultNormaliser() *normaliser {
	temps := []string{dir(`/tmp`), dir(`/var/tmp`), dir(`/private/tmp`), dir(`/private/var/folders`), dir(`/var/folders`)}
	homes := []string{`/home/` + nameChars + `+`, `/Users/` + nameChars + `+`, dir(`/root`), `[A-Za-z]:\\Users\\` + nameChars + `+`}
	for _, d := range localDirs(os.TempDir()) {
		temps = append(temps, dir(regexp.QuoteMeta(d)))
	}
	if h, err := os.UserHomeDir(); err == nil {
		for _, d := range localDirs(h) {
			homes = append(homes, dir(regexp.QuoteMeta(d)))
		}
	}
	return &normaliser{rules: []rule{
		newRule(lead+`(?:`+strings.Join(temps, "|")+`)(?:[/\\]`+pathChars+`*)?(?P<tail>)`, PlaceholderTemp, hasSlash),
		newRule(lead+`(?:`+strings.Join(homes, "|")+`)(?P<tail>(?:[/\\]`+pathChars+`*)?)`, PlaceholderHome, hasSlash),
		newRule(`(?i)(^|[^0-9a-f-])[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b(?P<tail>)`, PlaceholderUUID, hasDash),
		newRule(`(^|[^\w-])\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?\b(?P<tail>)`, PlaceholderDate, hasDash),
		newRule(`(?m)(^Chunk ID: )[0-9a-f]+(?P<tail>\n)`, PlaceholderChunk, hasCodexExec),
		newRule(`(?m)(^Wall time: )\d+(?:\.\d+)?(?P<tail> seconds\n)`, PlaceholderWallTime, hasCodexExec),
	}}
}

// localDirs is an absolute directory of this machine in the forms a client
// may print it: as given and with symlinks resolved. The root and
// relative paths are left out.
func localDirs(d string) []string {
	var out []string
	for _, p := range []string{d, evalSymlinks(d)} {
		p = strings.TrimRight(filepath.ToSlash(p), "/")
		if p == "" || !strings.HasPrefix(p, "/") || strings.Count(p, "/") < 1 || len(p) < 2 {
			continue
		}
		dup := false
		for _, o := range out {
			dup = dup || o == p
		}
		if !dup {
			out = append(out, p)
		}
	}
	return out
}

func evalSymlinks(p string) string {
	r, err := filepath.EvalSymlinks(p)
	if err != nil {
		return ""
	}
	return r
}

// str normalises one string.
func (n *normaliser) str(s string) string {
	if n == nil || len(s) < 4 {
		return s
	}
	// Each rule matches only in strings with the features it needs (the
	// temporary and home rules at a slash or a backslash, the UUID and date
	// rules at a '-', codex's at its mark), and no rule adds one.
	has := features(s)
	if has == 0 {
		return s
	}
	n.mu.Lock()
	out, ok := n.memo[s]
	n.mu.Unlock()
	if ok {
		return out
	}
	out = s
	for _, r := range n.rules {
		if has&r.needs != r.needs {
			continue
		}
		out = r.re.ReplaceAllString(out, r.repl)
	}
	n.mu.Lock()
	if n.memoSize+len(s)+len(out) <= memoBytes {
		if n.memo == nil {
			n.memo = map[string]string{}
		}
		if _, ok := n.memo[s]; !ok {
			n.memo[s] = out
			n.memoSize += len(s) + len(out)
		}
	}
	n.mu.Unlock()
	return out
}

// value normalises every string in a parsed JSON value, in place where
// it can.
func (n *normaliser) value(v any) any {
	switch x := v.(type) {
	case string:
		return n.str(x)
	case map[string]any:
		for k, e := range x {
			x[k] = n.value(e)
		}
		return x
	case []any:
		for i, e := range x {
			x[i] = n.value(e)
		}
		return x
	}
	return v
}
