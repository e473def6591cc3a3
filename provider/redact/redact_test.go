package redact

import (
	"context"
	"errors"
	"iter"
	"slices"
	"strings"
	"testing"

	"github.com/openmax/openmax/provider"
	"pgregory.net/rapid"
)

// parts is a provider that streams fixed parts.
func parts(ps ...provider.Part) provider.Provider {
	return provider.Func(func(context.Context, provider.Request) iter.Seq[provider.Part] {
		return func(yield func(provider.Part) bool) {
			for _, p := range ps {
				if !yield(p) {
					return
				}
			}
		}
	})
}

func collect(p provider.Provider) []provider.Part {
	var out []provider.Part
	for part := range p.Stream(context.Background(), provider.Request{}) {
		out = append(out, part)
	}
	return out
}

// joined concatenates the text deltas of a reply.
func joined(ps []provider.Part) string {
	var b strings.Builder
	for _, p := range ps {
		if t, ok := p.(provider.TextDelta); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}

// TestTextAnyChunking: however the reply text is cut into deltas, the
// deltas never carry a secret, not even spread over several of them (the
// joined text is what the session keeps), with no two secrets overlapping
// the joined text is exactly the input with each replaced, and with no
// secret at all the deltas are exactly the input's.
func TestTextAnyChunking(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		secrets := Secrets("sk-test-0123456789", "sk-ant-abcdefgh", "sk-test-01", "fgh-tail-xyz")
		alphabet := rapid.SampledFrom([]string{"a", "s", "k", "-", "sk-", "sk-test-0", "\n", "fgh-tail", "-xyz", "sk-test-0123456789", "sk-ant-abcdefgh", "0123456789"})
		in := strings.Join(rapid.SliceOf(alphabet).Draw(t, "parts"), "")
		var ps []provider.Part
		for rest := in; rest != ""; {
			n := rapid.IntRange(1, len(rest)).Draw(t, "cut")
			ps = append(ps, provider.TextDelta{Text: rest[:n]})
			rest = rest[n:]
		}
		if rapid.Bool().Draw(t, "finished") {
			ps = append(ps, provider.Finish{Reason: "stop"})
		}
		out := collect(Provider(parts(ps...), secrets...))
		got := joined(out)
		for _, s := range secrets {
			if strings.Contains(got, s) {
				t.Fatalf("secret %q survived in %q", s, got)
			}
		}
		if len(ps) > 0 {
			if _, finished := ps[len(ps)-1].(provider.Finish); finished {
				if _, ok := out[len(out)-1].(provider.Finish); !ok {
					t.Fatalf("the reply no longer ends with its Finish: %#v", out)
				}
			}
		}
		if !overlapping(in, secrets) && got != String(in, secrets) {
			t.Fatalf("got %q want %q", got, String(in, secrets))
		}
		if String(in, secrets) == in {
			// No secret: the very deltas that went in come out, so a
			// redacted live session and its unredacted replay stream the
			// same token lines.
			var want, gotParts []provider.Part
			for _, p := range ps {
				if _, ok := p.(provider.TextDelta); ok {
					want = append(want, p)
				}
			}
			for _, p := range out {
				if _, ok := p.(provider.TextDelta); ok {
					gotParts = append(gotParts, p)
				}
			}
			if !slices.Equal(want, gotParts) {
				t.Fatalf("deltas changed with no secret in them:\n in  %q\n out %q", want, gotParts)
			}
		}
	})
}

// overlapping reports whether occurrences of secrets in s overlap.
func overlapping(s string, secrets []string) bool {
	cover := make([]int, len(s)+1)
	for _, sec := range secrets {
		for i := 0; i+len(sec) <= len(s); i++ {
			if s[i:i+len(sec)] == sec {
				for j := i; j < i+len(sec); j++ {
					cover[j]++
				}
			}
		}
	}
	for _, c := range cover {
		if c > 1 {
			return true
		}
	}
	return false
}

// TestEveryPartRedacted: thinking (held text released when its block is
// signed), tool-call arguments, retry reasons and error messages lose the
// key; the error keeps its identity.
func TestEveryPartRedacted(t *testing.T) {
	const key = "sk-live-SECRETSECRET"
	out := collect(Provider(parts(
		provider.Retry{Attempt: 2, MaxAttempts: 4, Reason: "HTTP 401: bad key " + key},
		provider.ThinkingDelta{Text: "the key is sk-li"},
		provider.ThinkingDelta{Text: "ve-SECRETSECRET, and sk-"},
		provider.ThinkingDelta{Signature: "sig"},
		provider.TextDelta{Text: "text sk-live-SECRET"},
		provider.ToolCallPart{Call: provider.ToolCall{ID: "c1", Name: "run", Args: []byte(`{"k":"` + key + `"}`)}},
		provider.Error{Err: errors.Join(provider.ErrIncomplete, errors.New("echo "+key))},
	), key, "short"))
	var all strings.Builder
	for _, p := range out {
		all.WriteString(strings.ReplaceAll(strings.ReplaceAll(fmtPart(p), "\n", " "), "\x00", ""))
	}
	if strings.Contains(all.String(), "SECRETSECRET") {
		t.Errorf("a part still carries the key: %s", all.String())
	}
	// Held-back tails are released with the signature and before the call.
	want := "retry:HTTP 401: bad key [redacted]|thinking:the key is [redacted], and |thinking:sk-|text:text sk-live-SECRET|call:{\"k\":\"[redacted]\"}|error:"
	if !strings.HasPrefix(all.String(), want) {
		t.Errorf("parts\n %s\nwant prefix\n %s", all.String(), want)
	}
	if e, ok := out[len(out)-1].(provider.Error); !ok || !errors.Is(e.Err, provider.ErrIncomplete) {
		t.Errorf("the error lost its identity: %#v", out[len(out)-1])
	}
	if _, wrapped := Provider(parts(), "short").(*redactor); wrapped {
		t.Error("with no secret worth redacting the provider should be left as is")
	}
}

func fmtPart(p provider.Part) string {
	switch p := p.(type) {
	case provider.Retry:
		return "retry:" + p.Reason + "|"
	case provider.ThinkingDelta:
		if p.Text == "" {
			return ""
		}
		return "thinking:" + p.Text + "|"
	case provider.TextDelta:
		return "text:" + p.Text + "|"
	case provider.ToolCallPart:
		return "call:" + string(p.Call.Args) + "|"
	case provider.Error:
		return "error:" + p.Err.Error() + "|"
	}
	return "?|"
}

func TestCredentials(t *testing.T) {
	cases := []struct {
		name    string
		environ []string
		want    []string
	}{
		{"none", []string{"PATH=/usr/bin:/bin", "HOME=/home/me"}, nil},
		{"by name, longest first", []string{"OPENAI_API_KEY=sk-openai-1234", "GITHUB_TOKEN=ghp_0123456789abcdef", "DB_PASSWORD=hunter2hunter2x", "PATH=/bin"},
			[]string{"ghp_0123456789abcdef", "hunter2hunter2x", "sk-openai-1234"}},
		{"any case, short values left alone", []string{"my_secret=abcdefgh", "api_key=short", "X_AUTH=12345678"}, []string{"abcdefgh", "12345678"}},
		{"duplicates once, malformed entries skipped", []string{"A_KEY=samesame1", "B_TOKEN=samesame1", "NOEQUALS_KEY"}, []string{"samesame1"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Credentials(c.environ); !slices.Equal(got, c.want) {
				t.Errorf("Credentials = %q, want %q", got, c.want)
			}
		})
	}
}
