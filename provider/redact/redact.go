// Package redact keeps known secret values (the provider API keys openmax
// holds) out of everything a model reply carries: an upstream that echoes
// the key inside reply text, reasoning, a tool call's arguments or an error
// message would otherwise put it on stdout and into the session file. It
// wraps a provider.Provider and rewrites the parts as they stream, holding
// back only the tail of a text stream that could still turn into a secret,
// so a key split across deltas is caught too.
package redact

import (
	"context"
	"encoding/json"
	"iter"
	"slices"
	"strings"

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
		// flush releases what a stream held back, in order, before a part
		// that is not more of it (or the end of the reply).
		flush := func(except *stream) bool {
			if except != &thinking {
				if s := thinking.end(); s != "" && !yield(provider.ThinkingDelta{Text: s}) {
					return false
				}
			}
			if except != &text {
				if s := text.end(); s != "" && !yield(provider.TextDelta{Text: s}) {
					return false
				}
			}
			return true
		}
		for part := range r.p.Stream(ctx, req) {
			switch p := part.(type) {
			case provider.TextDelta:
				if !flush(&text) {
					return
				}
				if p.Text = text.feed(p.Text); p.Text == "" {
					continue
				}
				part = p
			case provider.ThinkingDelta:
				if !flush(&thinking) {
					return
				}
				p.Text = thinking.feed(p.Text)
				if p.Text == "" && p.Signature == "" {
					continue
				}
				if p.Signature != "" { // the block closes: nothing may stay behind
					p.Text += thinking.end()
				}
				part = p
			case provider.Retry:
				// What the previous attempt streamed is void.
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

// stream redacts one text stream fed in pieces: it releases everything
// except the longest tail that could still be the start of a secret, moved
// back so that it never splits a complete occurrence (two released pieces
// must never spell a secret).
type stream struct {
	secrets []string
	held    string
}

// feed takes the next piece and returns what can be released, redacted.
func (s *stream) feed(piece string) string {
	raw := s.held + piece
	b := cut(raw, s.secrets)
	s.held = raw[b:]
	return String(raw[:b], s.secrets)
}

// end releases what is held back: with no more text coming, it is no
// secret.
func (s *stream) end() string {
	out := String(s.held, s.secrets)
	s.held = ""
	return out
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
