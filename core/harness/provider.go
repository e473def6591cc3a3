package harness

import (
	"errors"
	"fmt"
	"net/http"
	"os"

	"github.com/openmax/openmax/provider"
	"github.com/openmax/openmax/provider/anthropic"
	"github.com/openmax/openmax/provider/echo"
	"github.com/openmax/openmax/provider/httpx"
	"github.com/openmax/openmax/provider/openai"
	"github.com/openmax/openmax/provider/openai/responses"
	"github.com/openmax/openmax/provider/redact"
	"github.com/openmax/openmax/provider/retry"
	"github.com/openmax/openmax/provider/script"
)

// newProvider builds the provider cfg names, wrapped in the retry policy
// and (unless the keys are placeholders) in redaction of the key, and the
// context window to report (0 for the default). Errors are configuration
// mistakes, reported before the handshake.
func newProvider(cfg Config, d Deps) (provider.Provider, int, error) {
	hc := &httpx.Client{HTTP: &http.Client{Transport: d.Transport}, Clock: d.Clock, IdleTimeout: cfg.IdleTimeout,
		HeaderTimeout: cfg.HeaderTimeout, ReplyTimeout: cfg.ReplyTimeout, MaxReplyBytes: cfg.MaxReplyBytes}
	var inner provider.Provider
	var key string // the secret the replies must never carry
	window := 0
	switch cfg.Provider {
	case "echo", "script":
		if cfg.BaseURL != "" {
			return nil, 0, fmt.Errorf("--base-url is only for --provider openai or anthropic")
		}
	}
	switch cfg.Provider {
	case "openai":
		key = d.getenv("OPENAI_API_KEY")
		if key == "" {
			return nil, 0, fmt.Errorf("--provider openai needs an API key: set OPENAI_API_KEY")
		}
		base := firstNonEmpty(cfg.BaseURL, d.getenv("OPENAI_BASE_URL"))
		model := firstNonEmpty(cfg.Model, DefaultOpenAIModel)
		if cfg.API == APIResponses {
			c, err := responses.New(responses.Config{APIKey: key, BaseURL: base, Model: model, HTTP: hc})
			if err != nil {
				return nil, 0, configError(err)
			}
			inner = c
			break
		}
		c, err := openai.New(openai.Config{APIKey: key, BaseURL: base, Model: model, HTTP: hc})
		if err != nil {
			return nil, 0, configError(err)
		}
		inner = c
	case "anthropic":
		key = d.getenv("ANTHROPIC_API_KEY")
		if key == "" {
			return nil, 0, fmt.Errorf("--provider anthropic needs an API key: set ANTHROPIC_API_KEY")
		}
		base := firstNonEmpty(cfg.BaseURL, d.getenv("ANTHROPIC_BASE_URL"))
		c, err := anthropic.New(anthropic.Config{APIKey: key, BaseURL: base, Model: firstNonEmpty(cfg.Model, DefaultAnthropicModel), HTTP: hc})
		if err != nil {
			return nil, 0, configError(err)
		}
		inner = c
	case "echo":
		if cfg.Script != "" {
			return nil, 0, fmt.Errorf("--script is only for --provider script")
		}
		return echo.Provider{}, 0, nil
	case "script":
		if cfg.Script == "" {
			return nil, 0, fmt.Errorf("--provider script needs --script FILE")
		}
		sc, err := script.Load(cfg.Script)
		if err != nil {
			return nil, 0, badFile{err}
		}
		inner, window = script.New(sc, d.Clock), sc.ContextTokens
	case "codex":
		return nil, 0, nil // the engine's Backend runs the turn (codex.go)
	case "":
		return nil, 0, fmt.Errorf("--stdio needs --provider (openai, anthropic, echo, script or codex)")
	default:
		return nil, 0, fmt.Errorf("unknown --provider %q (known: openai, anthropic, echo, script, codex)", cfg.Provider)
	}
	p := retry.New(inner, retry.Policy{MaxAttempts: cfg.MaxAttempts, Seed: d.Seed}, d.Clock)
	if !d.PlaceholderKeys {
		// An upstream that echoes the key must not put it on stdout or
		// into the session file: replies reach the engine redacted.
		return redact.Provider(p, key), window, nil
	}
	return p, window, nil
}

// secrets are openmax's own credential values, which no tool result may
// carry (core.Engine.Secrets): those of its environment's credential
// variables (redact.Credentials, the same set hooks never see) and the
// provider keys as Deps reads them. None when the keys are placeholders
// (a replay, whose recorded results were scrubbed when recorded).
func secrets(d Deps) []string {
	if d.PlaceholderKeys {
		return nil
	}
	return redact.Secrets(append(redact.Credentials(os.Environ()), d.getenv("OPENAI_API_KEY"), d.getenv("ANTHROPIC_API_KEY"))...)
}

// configError keeps a constructor's message but never a key.
func configError(err error) error {
	if errors.Is(err, provider.ErrMissingKey) {
		return fmt.Errorf("missing API key")
	}
	return err
}
