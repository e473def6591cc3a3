package scan

import (
	"encoding/base64"
	"encoding/json"
	"math"
	"regexp"
	"strings"
	"sync"
)

// The rule names a finding carries. Each is stable: an allowlist line
// names them, and `--json` output carries them.
const (
	RuleOpenAI       = "openai-key"        // sk-..., sk-proj-..., sk-svcacct-..., sk-admin-...
	RuleAnthropic    = "anthropic-key"     // sk-ant-...
	RuleGoogle       = "google-api-key"    // AIza + 35 characters
	RuleAWSKeyID     = "aws-access-key-id" // AKIA/ASIA + 16
	RuleAWSSigV4     = "aws-sigv4"         // a SigV4 signature (Authorization header or X-Amz-Signature)
	RuleAWSSession   = "aws-session-token" // X-Amz-Security-Token
	RuleGitHub       = "github-token"      // ghp_, gho_, ghu_, ghs_, ghr_ + 36
	RuleBearer       = "bearer-token"      // Authorization: Bearer ..., or "Bearer ..." in text
	RuleBasic        = "basic-auth"        // Authorization: Basic ...
	RuleAuthHeader   = "auth-header"       // any other Authorization value
	RuleCookie       = "cookie"            // a Cookie or Set-Cookie value
	RuleJWT          = "jwt"               // three base64url segments, the first a JSON header with "alg"
	RulePrivateKey   = "private-key"       // -----BEGIN ... PRIVATE KEY-----
	RuleSecretHeader = "secret-header"     // a header the recorder scrubs, holding no placeholder
	RuleSecretQuery  = "secret-query"      // a query parameter the recorder scrubs, holding no placeholder
	RuleSecretField  = "secret-field"      // a JSON or YAML field named like a credential
	RuleURLUser      = "url-credentials"   // user:password@ in a URL
	RuleEntropy      = "high-entropy"      // a random-looking token in a header, query value or JSON string
)

// Rules lists every rule name, in the order the docs give them.
func Rules() []string {
	return []string{RuleOpenAI, RuleAnthropic, RuleGoogle, RuleAWSKeyID, RuleAWSSigV4, RuleAWSSession,
		RuleGitHub, RuleBearer, RuleBasic, RuleAuthHeader, RuleCookie, RuleJWT, RulePrivateKey,
		RuleSecretHeader, RuleSecretQuery, RuleSecretField, RuleURLUser, RuleEntropy}
}

// textRule is a named pattern looked for in any text. hints are
// substrings one of which every match contains (compared
// case-sensitively), so most text is passed over without running the
// expression.
type textRule struct {
	name  string
	hints []string
	re    *regexp.Regexp
	group int                   // the submatch that is the secret (0: the whole match)
	check func(s string) bool   // a further test of the secret, or nil
	after func(s string) string // the secret's canonical text, or nil
}

// keyChars are the characters of the key formats (base64url and the
// separators vendors use).
const keyChars = `[A-Za-z0-9_\-]`

// textRules are compiled the first time a scan needs them, not at every
// start of the binary.
var textRules = sync.OnceValue(func() []textRule {
	return []textRule{
		{name: RuleAnthropic, hints: []string{"sk-ant-"}, re: regexp.MustCompile(`(?:^|[^A-Za-z0-9_\-])(sk-ant-` + keyChars + `{20,})`), group: 1},
		{name: RuleOpenAI, hints: []string{"sk-"}, re: regexp.MustCompile(`(?:^|[^A-Za-z0-9_\-])(sk-(?:proj-|svcacct-|admin-|None-)?` + keyChars + `{20,})`), group: 1,
			check: func(s string) bool { return !strings.HasPrefix(s, "sk-ant-") && mixed(s[3:]) }},
		{name: RuleGoogle, hints: []string{"AIza"}, re: regexp.MustCompile(`(?:^|[^A-Za-z0-9_\-])(AIza` + keyChars + `{35})(?:$|[^A-Za-z0-9_\-])`), group: 1},
		{name: RuleAWSKeyID, hints: []string{"AKIA", "ASIA"}, re: regexp.MustCompile(`(?:^|[^A-Za-z0-9])((?:AKIA|ASIA)[A-Z0-9]{16})(?:$|[^A-Za-z0-9])`), group: 1},
		{name: RuleGitHub, hints: []string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_"}, re: regexp.MustCompile(`(?:^|[^A-Za-z0-9_])(gh[pousr]_[A-Za-z0-9]{36,})`), group: 1},
		{name: RuleJWT, hints: []string{"eyJ"}, re: regexp.MustCompile(`(?:^|[^A-Za-z0-9_\-])(eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{2,}\.[A-Za-z0-9_\-]*)`), group: 1, check: jwtHeader},
		{name: RulePrivateKey, hints: []string{"-----BEGIN"}, re: regexp.MustCompile(`-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----(?:\s|\\[rn])*[A-Za-z0-9+/=]{0,64}`)},
		{name: RuleBearer, hints: []string{"earer "}, re: regexp.MustCompile(`(?:^|[^A-Za-z0-9])[Bb]earer +([A-Za-z0-9_\-.~+/]{16,}=*)`), group: 1, check: func(s string) bool { return !placeholder(s) && mixed(s) }},
	}
})

// mixed reports whether s has both a letter and a digit: a key does, a
// word or a long run of one character does not.
func mixed(s string) bool {
	var letter, digit bool
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9':
			digit = true
		case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			letter = true
		}
	}
	return letter && digit
}

// jwtHeader reports whether a JWT-shaped token's first segment decodes to
// a JSON object naming "alg", as every JWS and JWE header does.
func jwtHeader(tok string) bool {
	head, _, _ := strings.Cut(tok, ".")
	b, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(head, "="))
	if err != nil {
		return false
	}
	var m map[string]any
	if json.Unmarshal(b, &m) != nil {
		return false
	}
	_, ok := m["alg"]
	return ok
}

func containsAny(s string, subs []string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// match is one secret found in a text: its rule, the secret, and its byte
// offset in the text.
type match struct {
	rule  string
	value string
	at    int
}

// textMatches returns every named secret in s, in the order of the rules,
// each match in order of its offset.
func textMatches(s string) []match {
	var out []match
	rules := textRules()
	for i := range rules {
		r := &rules[i]
		if !containsAny(s, r.hints) {
			continue
		}
		for _, loc := range r.re.FindAllStringSubmatchIndex(s, -1) {
			a, b := loc[2*r.group], loc[2*r.group+1]
			v := s[a:b]
			if r.check != nil && !r.check(v) {
				continue
			}
			out = append(out, match{rule: r.name, value: v, at: a})
		}
	}
	return out
}

// placeholderWords are what scrubbers write in a secret's place: the
// recorder's "[scrubbed]" and the words other recorders use (vcrpy's
// filters, go-vcr hooks, hand edits). A value containing one (in any
// case) is a placeholder, not a secret.
var placeholderWords = []string{"scrubbed", "redacted", "filtered", "dummy", "placeholder", "removed", "masked", "hidden", "obfuscated"}

// placeholder reports whether v is no secret but what a scrubber left:
// empty, a placeholder word, or only punctuation and one repeated
// character (***, xxxx, 0000).
func placeholder(v string) bool {
	v = strings.TrimSpace(v)
	if v == "" {
		return true
	}
	if envRef().MatchString(v) {
		return true
	}
	l := strings.ToLower(v)
	for _, w := range placeholderWords {
		if strings.Contains(l, w) {
			return true
		}
	}
	var first rune
	for _, c := range l {
		if c >= 'a' && c <= 'z' || c >= '0' && c <= '9' {
			if first == 0 {
				first = c
			} else if c != first {
				return false
			}
		}
	}
	return true
}

// envRef matches a value that names where the secret comes from
// instead of holding it: $NAME, ${NAME}, <your key>, {{ .Key }}.
var envRef = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^(?:\$[A-Za-z_][A-Za-z0-9_]*|\$\{[^}]*\}|<[^<>]*>|\{\{[^{}]*\}\}|%[A-Za-z_]+%)$`)
})

// credentialish reports whether a value in a place that holds credentials
// (a secret header, query parameter or field) is long enough to be one:
// eight bytes or more (the recorder's shortest literal), not all digits.
func credentialish(v string) bool {
	v = strings.TrimSpace(v)
	if len(v) < 8 {
		return false
	}
	for i := 0; i < len(v); i++ {
		if v[i] < '0' || v[i] > '9' {
			return true
		}
	}
	return false
}

// The high-entropy rule looks at whole values (a header value, a query
// value, a JSON string) that are one token of key characters.
const (
	entropyMinLen = 20
	entropyMaxLen = 256
)

// entropy is the Shannon entropy of s in bits per byte.
func entropy(s string) float64 {
	var counts [256]int
	for i := 0; i < len(s); i++ {
		counts[s[i]]++
	}
	n := float64(len(s))
	h := 0.0
	for _, c := range counts {
		if c > 0 {
			p := float64(c) / n
			h -= p * math.Log2(p)
		}
	}
	return h
}

// highEntropy reports whether the whole of v looks like a random secret:
// 20 to 256 bytes of base64, base64url or hex characters (and ._~), with
// digits and letters of both cases (hex: digits and letters), not a
// UUID, not a run of consecutive characters (an alphabet used as
// padding), and with the entropy of a random string of its length and
// alphabet (entropyBar).
func highEntropy(v string) bool {
	if len(v) < entropyMinLen || len(v) > entropyMaxLen {
		return false
	}
	hex := true
	var upper, lower, digit bool
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case c >= '0' && c <= '9':
			digit = true
		case c >= 'a' && c <= 'f':
			lower = true
		case c >= 'g' && c <= 'z':
			lower, hex = true, false
		case c >= 'A' && c <= 'Z':
			upper, hex = true, false
		case c == '+' || c == '/' || c == '=' || c == '_' || c == '-' || c == '.' || c == '~':
			hex = false
		default:
			return false
		}
	}
	if uuidRe().MatchString(v) || sequential(v) {
		return false
	}
	if hex {
		if !digit || !lower {
			return false
		}
		// Hex is mostly hashes and ids; only a long one counts.
		return len(v) >= 32 && entropy(v) >= entropyBar(len(v), true)
	}
	if !upper || !lower || !digit {
		return false
	}
	return entropy(v) >= entropyBar(len(v), false)
}

var uuidRe = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)
})

// entropyBar is the entropy a token of n bytes must reach: the 1st
// percentile of the entropy of random strings of that length over
// base62 (or over hex), measured (20,000 draws a length), linearly
// between the lengths measured. So 99 of 100 random keys reach it, while
// words, paths, names and versions, whose bytes repeat, stay below.
func entropyBar(n int, hex bool) float64 {
	t := barBase62
	if hex {
		t = barHex
	}
	if n <= t[0].n {
		return t[0].h
	}
	for i := 1; i < len(t); i++ {
		if n <= t[i].n {
			a, b := t[i-1], t[i]
			return a.h + (b.h-a.h)*float64(n-a.n)/float64(b.n-a.n)
		}
	}
	return t[len(t)-1].h
}

type barPoint struct {
	n int
	h float64
}

var (
	barBase62 = []barPoint{{20, 3.65}, {24, 3.86}, {32, 4.2}, {48, 4.63}, {64, 4.91}, {96, 5.22}, {128, 5.4}, {192, 5.59}, {256, 5.68}}
	barHex    = []barPoint{{20, 2.9}, {24, 3.05}, {32, 3.27}, {48, 3.5}, {64, 3.63}, {96, 3.76}, {128, 3.82}, {192, 3.88}, {256, 3.91}}
)

// sequential reports whether more than a third of v's neighbouring bytes
// are consecutive characters (abcdef..., 0123...): padding alphabets
// have every byte distinct, the most entropy there is, and no secret.
func sequential(v string) bool {
	run := 0
	for i := 1; i < len(v); i++ {
		if v[i] == v[i-1]+1 {
			run++
		}
	}
	return run*3 > len(v)
}
