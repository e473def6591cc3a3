// Package runconfig is what a harness session runs with: the typed
// configuration (provider, model, limits), its command-line flags, its
// YAML names and defaults. It is a leaf of openmax's tree, so a cassette
// can store a session's configuration without importing the harness that
// assembles it (core/harness re-exports it).
package runconfig

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/openmax/openmax/provider/codec"
	"github.com/openmax/openmax/provider/httpx"
)

// Version is the openmax build, reported by hello.
const Version = "0.1.0"

// DefaultMaxReplyBytes is MaxReplyBytes's default: twice the body of the
// longest reply a current model streams (128k tokens at about 250 bytes an
// OpenAI chunk), and the size of a whole completion the OpenAI client
// accepts.
const DefaultMaxReplyBytes = 64 << 20

// DefaultMaxIterations is the most model requests of one turn when the
// configuration names none (the engine's default, core.DefaultMaxIterations).
const DefaultMaxIterations = 50

// Config is everything that decides how a harness session behaves, apart
// from what a caller substitutes (Deps). It is the one definition of the
// harness's settings: the command-line flags are bound to its fields
// (Flags), and a recorded session stores it as it is (its YAML form), so a
// recording does not depend on how the flags are spelt.
//
// The zero Config is not the default one; start from Defaults.
type Config struct {
	// Provider is the model provider: a vendor wire's provider in the
	// registry (provider/codec: openai, anthropic, ...), echo (repeats
	// each prompt), script (plays Script) or codex (each turn's agent loop
	// runs inside codex app-server: docs/codex-backend.md).
	Provider string `yaml:"provider"`
	// Codex is the command line of the app-server under --provider codex:
	// the program and its arguments, split at white space (no quoting),
	// followed by `app-server -c check_for_update_on_startup=false`. Empty
	// means codex from PATH.
	Codex string `yaml:"codex,omitempty"`
	// CodexTranscript, when set, is the file every line exchanged with the
	// app-server is recorded to ({"dir","msg"} lines, emails redacted), for
	// openmax fake-app-server to replay.
	CodexTranscript string `yaml:"-"`
	// Script is the scenario file of the script provider.
	Script string `yaml:"script,omitempty"`
	// Model is the model name sent to the provider; empty means the
	// wire's default (codec.Info.DefaultModel).
	Model string `yaml:"model,omitempty"`
	// BaseURL is the provider's base URL; empty means the wire's base URL
	// variable ($OPENAI_BASE_URL, $ANTHROPIC_BASE_URL, ...), else the
	// vendor's.
	BaseURL string `yaml:"base_url,omitempty"`
	// Env is the environment the vendor's client read besides its
	// credentials, as the session began: what shapes its requests
	// (Vertex AI's switch, project and location; a region; a base URL
	// variable). The harness fills it in, so a recording keeps it, and a
	// client built from a Config that has it reads these values instead
	// of the process's, so a replay sends the requests the recording
	// holds. Variables that name a key, token, secret, password or
	// credential, or that a wire lists as its credentials, are never
	// kept.
	Env map[string]string `yaml:"env,omitempty"`
	// API picks the wire of a provider that has several (codec.Info.API):
	// for openai, chat (Chat Completions, also when empty) or responses
	// (the Responses API, POST /responses). The harness checks it against
	// the registry.
	API string `yaml:"api,omitempty"`
	// Project is the project directory; empty means the working directory.
	Project string `yaml:"project,omitempty"`
	// SessionID names the session; empty means a random id. A recording
	// keeps it beside the Config, not in it.
	SessionID string `yaml:"-"`
	// Continue resumes the project's latest saved session instead of
	// starting one. A recording never continues.
	Continue bool `yaml:"-"`
	// System is the system prompt frozen from the project when the harness
	// was built (its .openmax/system.md and skills, docs/policy.md). It is
	// not a flag: New sets it, so a recording keeps the prompt its requests
	// carried and a replay sends the same.
	System string `yaml:"system,omitempty"`
	// Compact forces a compaction at the start of the session's first
	// turn, answered by a compacted line (docs/policy.md).
	Compact bool `yaml:"compact,omitempty"`
	// MaxIterations caps the model requests of one turn (max_iterations).
	MaxIterations int `yaml:"max_iterations"`
	// MaxAttempts caps the attempts of one model request, the first
	// included, before a retryable failure ends the turn.
	MaxAttempts int `yaml:"max_attempts"`
	// MaxAgentTokens caps the tokens one turn may spend before its next
	// request is refused (budget_exhausted); 0 means no cap.
	MaxAgentTokens int `yaml:"max_agent_tokens,omitempty"`
	// ApprovalTimeout settles an unanswered approval request as timed_out;
	// 0 waits.
	ApprovalTimeout time.Duration `yaml:"approval_timeout,omitempty"`
	// IdleTimeout: a provider stream that sends no byte for this long
	// counts as died.
	IdleTimeout time.Duration `yaml:"idle_timeout"`
	// HeaderTimeout: a provider that sends no response headers for this
	// long counts as a failed connection (retried); 0 means no limit.
	HeaderTimeout time.Duration `yaml:"header_timeout"`
	// ReplyTimeout: a model reply (one attempt) not complete this long
	// after its request ends the turn truncated; 0 means no limit.
	ReplyTimeout time.Duration `yaml:"reply_timeout"`
	// MaxReplyBytes: a reply whose response body (decompressed) passes
	// this many bytes ends the turn truncated; 0 means no limit.
	MaxReplyBytes int64 `yaml:"max_reply_bytes"`
}

// Defaults returns the default Config: no provider chosen yet, every limit
// at its default.
func Defaults() Config {
	return Config{
		MaxIterations: DefaultMaxIterations,
		MaxAttempts:   4,
		IdleTimeout:   120 * time.Second,
		HeaderTimeout: 120 * time.Second,
		ReplyTimeout:  30 * time.Minute,
		MaxReplyBytes: DefaultMaxReplyBytes,
	}
}

// Validate reports a setting out of range; the message names the flag.
func (c *Config) Validate() error {
	switch {
	case c.MaxIterations < 1:
		return errors.New("--max-iterations must be at least 1")
	case c.MaxAgentTokens < 0:
		return errors.New("--max-agent-tokens must not be negative")
	case c.MaxAttempts < 1:
		return errors.New("--max-attempts must be at least 1")
	case c.MaxReplyBytes < 0:
		return errors.New("--max-reply-bytes must not be negative")
	case c.ApprovalTimeout < 0:
		return errors.New("--approval-timeout must not be negative")
	case (c.Codex != "" || c.CodexTranscript != "") && c.Provider != "codex":
		return errors.New("--codex and --codex-transcript are only for --provider codex")
	case c.Provider == "codex" && (c.BaseURL != "" || c.Script != ""):
		return errors.New("--provider codex takes no --base-url or --script: codex reads its model provider from CODEX_HOME/config.toml")
	case c.Provider == "codex" && c.Compact:
		return errors.New("--compact is not for --provider codex: codex compacts its own thread")
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"idle-timeout", c.IdleTimeout}, {"header-timeout", c.HeaderTimeout}, {"reply-timeout", c.ReplyTimeout}} {
		if d.v < 0 {
			return fmt.Errorf("--%s must not be negative", d.name)
		}
	}
	return nil
}

// Flags binds the command-line flags of the harness to c's fields, with
// c's current values as their defaults (start from Defaults). The flag
// names are the CLI's; the YAML names of a recording are the fields' own.
func (c *Config) Flags(fs *flag.FlagSet) {
	fs.StringVar(&c.Provider, "provider", c.Provider, "the model provider: "+providerList()+", echo (repeats each prompt), script (plays --script) or codex (the turn runs inside codex app-server)")
	fs.StringVar(&c.Codex, "codex", c.Codex, "with --provider codex: the app-server's `command line`, split at spaces (default: codex from PATH)")
	fs.StringVar(&c.CodexTranscript, "codex-transcript", c.CodexTranscript, "with --provider codex: record every line exchanged with the app-server to this `file`")
	fs.StringVar(&c.Script, "script", c.Script, "with --provider script: the scenario file (YAML)")
	fs.StringVar(&c.Model, "model", c.Model, "the model name sent to the provider (default: the provider's own"+modelList()+")")
	fs.StringVar(&c.BaseURL, "base-url", c.BaseURL, "the provider's base URL (default: its base URL variable, such as $OPENAI_BASE_URL, else the vendor's)")
	fs.StringVar(&c.API, "api", c.API, "with a provider that has several wires, which one"+apiList())
	fs.IntVar(&c.MaxAgentTokens, "max-agent-tokens", c.MaxAgentTokens, "tokens one turn may spend before its next request is refused (budget_exhausted); 0 means no cap")
	fs.IntVar(&c.MaxAttempts, "max-attempts", c.MaxAttempts, "attempts per model request, the first included, before a retryable failure ends the turn")
	fs.DurationVar(&c.ApprovalTimeout, "approval-timeout", c.ApprovalTimeout, "settle an unanswered approval request as timed_out after this long (0: wait)")
	fs.DurationVar(&c.IdleTimeout, "idle-timeout", c.IdleTimeout, "a provider stream that sends no byte for this long counts as died")
	fs.DurationVar(&c.HeaderTimeout, "header-timeout", c.HeaderTimeout, "a provider that sends no response headers for this long counts as a failed connection (retried); 0: no limit")
	fs.DurationVar(&c.ReplyTimeout, "reply-timeout", c.ReplyTimeout, "a model reply (one attempt) not complete this long after its request ends the turn truncated; 0: no limit")
	fs.Var((*byteSize)(&c.MaxReplyBytes), "max-reply-bytes", "a model reply whose response body (decompressed) passes this `size` ends the turn truncated: bytes, or with KiB, MiB, GiB; 0: no limit")
	fs.StringVar(&c.Project, "project", c.Project, "the project directory (default: the working directory)")
	fs.StringVar(&c.SessionID, "session-id", c.SessionID, "use this session id instead of a random one (for reproducible transcripts)")
	fs.BoolVar(&c.Continue, "continue", c.Continue, "with --stdio: resume the project's latest session")
	fs.BoolVar(&c.Compact, "compact", c.Compact, "compact the transcript at the start of the first turn (a forced compaction: its compacted line says what was pruned, 0 messages when it was already under the target)")
	fs.IntVar(&c.MaxIterations, "max-iterations", c.MaxIterations, "model requests allowed per turn before it ends with max_iterations")
}

// FromArgs reads a Config from harness flags, starting from Defaults. It
// is how recordings made before the Config was stored (they kept the
// command line) are read; flags that are not the harness's, such as
// --stdio, are ignored.
func FromArgs(args []string) (Config, error) {
	c := Defaults()
	fs := flag.NewFlagSet("recorded flags", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	c.Flags(fs)
	var kept []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if strings.HasPrefix(a, "-") && fs.Lookup(name) == nil {
			continue // not a harness flag (--stdio); it takes no value
		}
		kept = append(kept, a)
	}
	if err := fs.Parse(kept); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	return c, c.Validate()
}

// byteSize is a flag holding a byte count: a number, optionally with a
// binary unit (KiB, MiB, GiB; K, M, G and KB, MB, GB mean the same).
type byteSize int64

func (b *byteSize) String() string {
	if b == nil || *b == 0 {
		return "0"
	}
	return strings.ReplaceAll(httpx.Size(int64(*b)), " ", "")
}

// Set parses a size.
func (b *byteSize) Set(s string) error {
	v := strings.TrimSpace(s)
	num := strings.TrimRightFunc(v, func(r rune) bool { return r < '0' || r > '9' })
	unit := strings.ToLower(strings.TrimSpace(v[len(num):]))
	mult := int64(1)
	switch unit {
	case "", "b":
	case "k", "kb", "kib":
		mult = 1 << 10
	case "m", "mb", "mib":
		mult = 1 << 20
	case "g", "gb", "gib":
		mult = 1 << 30
	default:
		return fmt.Errorf("unknown unit %q (use bytes, KiB, MiB or GiB)", v[len(num):])
	}
	n, err := strconv.ParseUint(num, 10, 63)
	if err != nil {
		return fmt.Errorf("not a size (a number of bytes, with KiB, MiB or GiB if you like): %q", s)
	}
	if n > uint64(math.MaxInt64/mult) {
		return fmt.Errorf("too large: %q", s)
	}
	*b = byteSize(int64(n) * mult)
	return nil
}

// The flags' help names what the wire registry (provider/codec) holds
// when they are made: the binary has registered its vendors by then.

// providerList names the registered providers: "anthropic, openai".
func providerList() string {
	if p := codec.Providers(); len(p) > 0 {
		return strings.Join(p, ", ")
	}
	return "a vendor's"
}

// modelList names each provider's default model: ": anthropic
// claude-sonnet-4-5, openai gpt-4o-mini".
func modelList() string {
	var out []string
	for _, w := range codec.Wires() {
		if in := w.Info(); in.Default && in.DefaultModel != "" {
			out = append(out, in.Provider+" "+in.DefaultModel)
		}
	}
	if len(out) == 0 {
		return ""
	}
	return ": " + strings.Join(out, ", ")
}

// apiList names each provider's wires, the default first: " (openai:
// chat, the default, or responses)".
func apiList() string {
	var out []string
	for _, p := range codec.Providers() {
		def, err := codec.ForProvider(p, "")
		apis := codec.APIs(p)
		if err != nil || len(apis) < 2 {
			continue
		}
		list := def.Info().API + ", the default"
		for _, a := range apis {
			if a != def.Info().API {
				list += ", or " + a
			}
		}
		out = append(out, p+": "+list)
	}
	if len(out) == 0 {
		return ""
	}
	return " (" + strings.Join(out, "; ") + ")"
}
