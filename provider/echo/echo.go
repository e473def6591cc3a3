// Package echo is an offline provider that answers each prompt with the
// prompt's own text, streamed word by word, and finishes with "stop". It
// exists for smoke tests and demos that must run with no network.
package echo

import (
	"context"
	"iter"
	"strings"

	"github.com/openmax/openmax/provider"
)

// Provider echoes the latest user message.
type Provider struct{}

// Stream yields the last user message back as text deltas, then Finish.
func (Provider) Stream(ctx context.Context, req provider.Request) iter.Seq[provider.Part] {
	return func(yield func(provider.Part) bool) {
		var text string
		for i := len(req.Messages) - 1; i >= 0; i-- {
			if req.Messages[i].Role == provider.RoleUser {
				text = req.Messages[i].Text
				break
			}
		}
		for _, w := range words(text) {
			if ctx.Err() != nil {
				return
			}
			if !yield(provider.TextDelta{Text: w}) {
				return
			}
		}
		if ctx.Err() != nil {
			return
		}
		yield(provider.Finish{Reason: "stop"})
	}
}

// words splits s after each run of spaces, so joining the pieces gives s.
func words(s string) []string {
	var out []string
	for len(s) > 0 {
		i := strings.IndexByte(s, ' ')
		if i < 0 {
			out = append(out, s)
			break
		}
		j := i
		for j < len(s) && s[j] == ' ' {
			j++
		}
		out = append(out, s[:j])
		s = s[j:]
	}
	return out
}
