// Package redact keeps known secret values (the provider API keys openmax
// holds) out of everything a model reply carries: an upstream that echoes
// the key inside reply text, reasoning, a tool call's arguments or an error
// message would otherwise put it on stdout and into the session file. It
// wraps a provider.Provider and rewrites the parts as they stream, holding
// back the deltas whose text could still turn into a secret, so a key split
// across deltas is caught too, and releasing every other delta unchanged.
package redact

import (
	"context"
	"encoding/json"
	"iter"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/openmax/openmax/provider"
)

// Marker replaces every occurrence of a secret.
const Marker = "[redacted]"

// MinSecret is the shortest value treated as a secret: shorter ones would
// replace innocent text.
const MinSecret = 8

// Secrets returns the values worth redacting: those at least MinSecret
// bytes long, longest first (so a secret that contains another is replaced
// whole), without duplicates.
func Secrets(values ...string) []string {
	var out []string
	for _, v := range values {
		if len(v) >= MinSecret && !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	slices.SortFunc(out, func(a, b string) int { return len(b) - len(a) })
	return out
}

// credentialName matches the names of environment variables that hold
// credentials.
var credentialName = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)(KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH)`)
})

// Credentials returns the values of the variables of environ ("NAME=value"
// entries, as os.Environ gives them) whose names say they hold a
// credential (OPENAI_API_KEY, GITHUB_TOKEN, DB_PASSWORD, ...), as Secrets
// returns them: openmax's own secrets, which nothing it emits, saves or
// sends may carry.
func Credentials(environ []string) []string {
	var values []string
	for _, kv := range environ {
		name, v, ok := strings.Cut(kv, "=")
		if ok && credentialName().MatchString(name) {
			values = append(values, v)
		}
	}
	return Secrets(values...)
}

// String returns s with every secret (from Secrets) replaced by Marker.
func String(s string, secrets []string) string {
	for _, v := range secrets {
		s = strings.ReplaceAll(s, v, Marker)
	}
	return s
}

// Provider wraps p so that no part of its replies carries a secret. With no
// secret worth redacting it returns p.
func Provider(p provider.Provider, secrets ...string) provider.Provider {
	s := Secrets(secrets...)
	if len(s) == 0 {
		return p
	}
	return &redactor{p: p, secrets: s}
}

type redactor struct {
	p       provider.Provider
	secrets []string
}

// Stream implements provider.Provider.
func (r *redactor) Stream(ctx context.Context, req provider.Request) iter.Seq[provider.Part] {
	return func(yield func(provider.Part) bool) {
		text, thinking := stream{secrets: r.secrets}, stream{secrets: r.secrets}
		texts := func(pieces []string) bool {
			for _, t := range pieces {
				if !yield(provider.TextDelta{Text: t}) {
					return false
				}
			}
			return true
		}
		thoughts := func(pieces []string, signature string) bool {
			for i, t := range pieces {
				p := provider.ThinkingDelta{Text: t}
				if i == len(pieces)-1 {
					p.Signature = signature
				}
				if !yield(p) {
					return false
				}
			}
			if len(pieces) == 0 && signature != "" {
				return yield(provider.ThinkingDelta{Signature: signature})
			}
			return true
		}
		// flush releases what a stream held back, in order, before a part
		// that is not more of it (or the end of the reply).
		flush := func(except *stream) bool {
			if except != &thinking && !thoughts(thinking.end(), "") {
				return false
			}
			return except == &text || texts(text.end())
		}
		for part := range r.p.Stream(ctx, req) {
			switch p := part.(type) {
			case provider.TextDelta:
				if !flush(&text) || !texts(text.feed(p.Text)) {
					return
				}
				continue
			case provider.ThinkingDelta:
				if !flush(&thinking) {
					return
				}
				pieces := thinking.feed(p.Text)
				if p.Signature != "" { // the block closes: nothing may stay behind
					pieces = append(pieces, thinking.end()...)
				}
				if !thoughts(pieces, p.Signature) {
					return
				}
				continue
			case provider.Retry:
				// The attempt is over: what it held back is released (it
				// cannot grow into a secret any more), then the next
				// attempt starts afresh.
				if !flush(nil) {
					return
				}
				text, thinking = stream{secrets: r.secrets}, stream{secrets: r.secrets}
				p.Reason = String(p.Reason, r.secrets)
				part = p
			default:
				if !flush(nil) {
					return
				}
				part = r.other(part)
			}
			if !yield(part) {
				return
			}
		}
		flush(nil) // a truncated reply keeps its partial text
	}
}

// other redacts the parts that are not text streams.
func (r *redactor) other(part provider.Part) provider.Part {
	switch p := part.(type) {
	case provider.ToolCallPart:
		p.Call.ID = String(p.Call.ID, r.secrets)
		p.Call.Name = String(p.Call.Name, r.secrets)
		// A key is plain ASCII and Marker needs no JSON escaping, so the
		// replacement keeps the arguments exactly as valid as they were.
		p.Call.Args = json.RawMessage(String(string(p.Call.Args), r.secrets))
		return p
	case provider.UnrunCall:
		call := r.other(provider.ToolCallPart{Call: p.Call}).(provider.ToolCallPart)
		p.Call, p.Reason = call.Call, String(p.Reason, r.secrets)
		return p
	case provider.Finish:
		p.Reason = String(p.Reason, r.secrets)
		return p
	case provider.Error:
		if p.Err != nil {
			if msg := p.Err.Error(); String(msg, r.secrets) != msg {
				p.Err = &redactedError{msg: String(msg, r.secrets), err: p.Err}
			}
		}
		return p
	}
	return part
}

// redactedError keeps the failure's identity (errors.Is/As still see it)
// but says it without the secret.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// stream redacts one text stream fed in pieces. It holds back the pieces
// whose text could still be the start of a secret and releases the others
// unchanged, each as the piece it was: where no secret occurs, the pieces
// that come out are exactly the pieces that went in (only later), so a
// redacted live session and its unredacted replay stream the same deltas.
// Where a secret does occur, the text up to it and the marker come out as
// one piece, never split so that two released pieces spell a secret.
type stream struct {
	secrets []string
	held    []string // pieces held back, in order
}

// feed takes the next piece and returns the pieces that can be released.
func (s *stream) feed(piece string) []string {
	if piece == "" {
		return nil
	}
	s.held = append(s.held, piece)
	raw := strings.Join(s.held, "")
	b := cut(raw, s.secrets)
	if red := String(raw[:b], s.secrets); red != raw[:b] {
		// A secret occurred: released as one redacted piece.
		s.held = nil
		if b < len(raw) {
			s.held = []string{raw[b:]}
		}
		return []string{red}
	}
	// Release the whole pieces that end by b; the one b falls inside, and
	// those after it, stay held.
	n, end := 0, 0
	for n < len(s.held) && end+len(s.held[n]) <= b {
		end += len(s.held[n])
		n++
	}
	out := s.held[:n:n]
	s.held = slices.Clone(s.held[n:])
	return out
}

// end releases what is held back: with no more text coming, it is no
// secret unless it spells one whole.
func (s *stream) end() []string {
	held := s.held
	s.held = nil
	raw := strings.Join(held, "")
	if red := String(raw, s.secrets); red != raw {
		return []string{red}
	}
	return held
}

// cut is how much of raw can be released.
func cut(raw string, secrets []string) int {
	b := len(raw) - partial(raw, secrets)
	for moved := true; moved; {
		moved = false
		for _, s := range secrets {
			for i := max(0, b-len(s)+1); i < b; i++ {
				if strings.HasPrefix(raw[i:], s) && i+len(s) > b {
					b, moved = i, true
					break
				}
			}
		}
	}
	return b
}

// partial is the length of the longest tail of raw that is a proper prefix
// of a secret.
func partial(raw string, secrets []string) int {
	longest := 0
	for _, s := range secrets {
		for k := min(len(s)-1, len(raw)); k > longest; k-- {
			if strings.HasSuffix(raw, s[:k]) {
				longest = k
				break
			}
		}
	}
	return longest
}
