package scan

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
)

// DefaultAllowFile is the allowlist `openmax cassette scan` reads when no
// --allow is given: the first found in the working directory or a parent
// of it, up to the repository root (the first with a .git entry).
const DefaultAllowFile = ".openmax-scan-allow"

// An Allowlist says which findings are known fakes. Its text has one entry
// a line (blank lines and lines starting with # are skipped):
//
//	RULE:FINGERPRINT   one value under one rule, as a finding prints it
//	                   (openai-key:3f2a9c1b0d4e5f67)
//	value:TEXT         this exact value, under any rule
//	re:REGEXP          any value the RE2 expression matches in full
//	rule:RULE          the whole rule switched off
//
// A fingerprint is the first 16 hex digits of the value's SHA-256, so an
// allowlist never holds the secret it allows.
type Allowlist struct {
	fps    map[string]bool
	values map[string]bool
	res    []*regexp.Regexp
	rules  map[string]bool
}

// builtinAllow is the known fakes of openmax's own recordings and tests.
//
//go:embed builtin.allow
var builtinAllow []byte

// Builtin returns the allowlist of openmax's own known fakes (the fake
// keys of the recordings in its repository), which every scan applies.
func Builtin() *Allowlist {
	a, err := ParseAllowlist("builtin.allow", builtinAllow)
	if err != nil {
		panic(err)
	}
	return a
}

var ruleNameRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9]+(?:-[a-z0-9]+)*$`) })

// ParseAllowlist reads an allowlist's text; name is used in errors, which
// give the line.
func ParseAllowlist(name string, data []byte) (*Allowlist, error) {
	a := &Allowlist{fps: map[string]bool{}, values: map[string]bool{}, rules: map[string]bool{}}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimRight(sc.Text(), "\r")
		t := strings.TrimSpace(line)
		if t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		switch {
		case strings.HasPrefix(t, "value:"):
			a.values[strings.TrimPrefix(t, "value:")] = true
		case strings.HasPrefix(t, "re:"):
			re, err := regexp.Compile(`^(?:` + strings.TrimPrefix(t, "re:") + `)$`)
			if err != nil {
				return nil, fmt.Errorf("%s:%d: %w", name, n, err)
			}
			a.res = append(a.res, re)
		case strings.HasPrefix(t, "rule:"):
			r := strings.TrimPrefix(t, "rule:")
			if !slices.Contains(Rules(), r) {
				return nil, fmt.Errorf("%s:%d: no rule %q (the rules: %s)", name, n, r, strings.Join(Rules(), ", "))
			}
			a.rules[r] = true
		default:
			rule, fp, ok := strings.Cut(t, ":")
			if !ok || !ruleNameRe().MatchString(rule) || len(fp) != 16 || !isHex(fp) {
				return nil, fmt.Errorf("%s:%d: not an entry (RULE:FINGERPRINT, value:TEXT, re:REGEXP or rule:RULE): %q", name, n, redactLine(t))
			}
			a.fps[t] = true
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return a, nil
}

// ReadAllowlist reads the allowlist file at path.
func ReadAllowlist(path string) (*Allowlist, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("allowlist: %w", err)
	}
	return ParseAllowlist(path, data)
}

// FindDefaultAllow returns the path of the DefaultAllowFile in dir or the
// nearest parent of it, stopping at the repository root (a directory with
// a .git entry), or "" when there is none.
func FindDefaultAllow(dir string) string {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return ""
	}
	for {
		p := filepath.Join(dir, DefaultAllowFile)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			return p
		}
		if _, err := os.Lstat(filepath.Join(dir, ".git")); err == nil {
			return ""
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

// Merge returns an allowlist allowing what any of lists allows.
func Merge(lists ...*Allowlist) *Allowlist {
	out := &Allowlist{fps: map[string]bool{}, values: map[string]bool{}, rules: map[string]bool{}}
	for _, a := range lists {
		if a == nil {
			continue
		}
		for k := range a.fps {
			out.fps[k] = true
		}
		for k := range a.values {
			out.values[k] = true
		}
		for k := range a.rules {
			out.rules[k] = true
		}
		out.res = append(out.res, a.res...)
	}
	return out
}

// Allows reports whether the value found under rule is allowed.
func (a *Allowlist) Allows(rule, value string) bool {
	if a == nil {
		return false
	}
	if a.rules[rule] || a.values[value] || a.fps[Fingerprint(rule, value)] {
		return true
	}
	for _, re := range a.res {
		if re.MatchString(value) {
			return true
		}
	}
	return false
}

// Fingerprint names a value found under a rule without holding it:
// "RULE:" and the first 16 hex digits of the value's SHA-256.
func Fingerprint(rule, value string) string {
	sum := sha256.Sum256([]byte(value))
	return rule + ":" + hex.EncodeToString(sum[:8])
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if !(s[i] >= '0' && s[i] <= '9' || s[i] >= 'a' && s[i] <= 'f') {
			return false
		}
	}
	return true
}

// redactLine is a malformed allowlist line as an error shows it: a line
// that is not an entry may be a secret pasted in, so only its start.
func redactLine(s string) string {
	return Redact(s)
}

// Redact is a secret as output shows it: its first four characters (fewer
// for a short one: at most a quarter of it) and an ellipsis.
func Redact(v string) string {
	r := []rune(v)
	n := min(4, len(r)/4)
	return string(r[:n]) + "…"
}
