package harness

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"

	"github.com/openmax/openmax/provider"
	"github.com/openmax/openmax/provider/codec"
	"github.com/openmax/openmax/provider/echo"
	"github.com/openmax/openmax/provider/httpx"
	"github.com/openmax/openmax/provider/redact"
	"github.com/openmax/openmax/provider/retry"
	"github.com/openmax/openmax/provider/script"
	_ "github.com/openmax/openmax/provider/vendors" // every built-in wire
)

// newProvider builds the provider cfg names, wrapped in the retry policy
// and (unless the keys are placeholders) in redaction of its credentials,
// and the context window to report (0 for the default). A vendor provider
// is the client of the wire the registry (provider/codec) has for
// --provider and --api; echo, script and codex are the harness's own.
// Errors are configuration mistakes, reported before the handshake. A
// vendor client reads the environment through cfg.Env first; what else it
// read (credentials aside) is put in cfg.Env, for the recording.
func newProvider(cfg *Config, d Deps) (provider.Provider, int, error) {
	hc := &httpx.Client{HTTP: &http.Client{Transport: d.Transport}, Clock: d.Clock, IdleTimeout: cfg.IdleTimeout,
		HeaderTimeout: cfg.HeaderTimeout, ReplyTimeout: cfg.ReplyTimeout, MaxReplyBytes: cfg.MaxReplyBytes}
	var inner provider.Provider
	var keys []string // the secrets the replies must never carry
	window := 0
	switch cfg.Provider {
	case "echo", "script", "codex":
		if cfg.BaseURL != "" && cfg.Provider != "codex" {
			return nil, 0, fmt.Errorf("--base-url is only for --provider %s", orList(codec.Providers()))
		}
		if cfg.API != "" {
			return nil, 0, apiError(*cfg)
		}
	}
	switch cfg.Provider {
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
		return nil, 0, fmt.Errorf("--stdio needs --provider (%s)", orList(providerNames()))
	default:
		w, err := vendorWire(*cfg)
		if err != nil {
			return nil, 0, err
		}
		getenv, read := recordedEnv(cfg.Env, d.getenv)
		c, err := w.NewClient(codec.ClientConfig{BaseURL: cfg.BaseURL, Model: cfg.Model, HTTP: hc, Getenv: getenv})
		if err != nil {
			return nil, 0, configError(err)
		}
		if len(read) > 0 {
			cfg.Env = read
		}
		inner = c
		for _, env := range w.Info().CredentialEnv {
			keys = append(keys, d.getenv(env))
		}
	}
	p := retry.New(inner, retry.Policy{MaxAttempts: cfg.MaxAttempts, Seed: d.Seed}, d.Clock)
	if !d.PlaceholderKeys {
		// An upstream that echoes a key must not put it on stdout or
		// into the session file: replies reach the engine redacted.
		return redact.Provider(p, keys...), window, nil
	}
	return p, window, nil
}

// recordedEnv is the environment a vendor client reads: kept, the
// values a recorded session holds; else getenv's. read collects what was
// read and found, credentials aside (see Config.Env).
func recordedEnv(kept map[string]string, getenv func(string) string) (func(string) string, map[string]string) {
	read := map[string]string{}
	return func(k string) string {
		v, ok := kept[k]
		if !ok {
			v = getenv(k)
		}
		if v != "" && !credentialEnv(k) {
			read[k] = v
		}
		return v
	}, read
}

// credentialEnv reports whether an environment variable holds a
// credential: a wire names it so, or its name says key, token, secret,
// password or credential.
func credentialEnv(k string) bool {
	if slices.Contains(codec.CredentialEnv(), k) {
		return true
	}
	u := strings.ToUpper(k)
	for _, s := range []string{"KEY", "TOKEN", "SECRET", "PASSWORD", "CREDENTIAL"} {
		if strings.Contains(u, s) {
			return true
		}
	}
	return false
}

// vendorWire is the registered wire --provider and --api select.
func vendorWire(cfg Config) (codec.Wire, error) {
	if !slices.Contains(codec.Providers(), cfg.Provider) {
		return nil, fmt.Errorf("unknown --provider %q (known: %s)", cfg.Provider, strings.Join(providerNames(), ", "))
	}
	apis := codec.APIs(cfg.Provider)
	if cfg.API != "" && len(apis) == 0 {
		return nil, apiError(cfg)
	}
	if cfg.API != "" && !slices.Contains(apis, cfg.API) {
		return nil, fmt.Errorf("unknown --api %q (known: %s)", cfg.API, strings.Join(apis, ", "))
	}
	return codec.ForProvider(cfg.Provider, cfg.API)
}

// apiError refuses --api for a provider that has one wire or none.
func apiError(cfg Config) error {
	var with []string
	for _, p := range codec.Providers() {
		if apis := codec.APIs(p); len(apis) > 1 {
			with = append(with, p+" ("+orList(apis)+")")
		}
	}
	return fmt.Errorf("--api is only for --provider %s: it picks the wire, not for --provider %s", orList(with), cfg.Provider)
}

// providerNames are the --provider values: the registry's, then the
// harness's own.
func providerNames() []string { return append(codec.Providers(), "echo", "script", "codex") }

// orList joins items as "a, b or c".
func orList(items []string) string {
	if len(items) < 2 {
		return strings.Join(items, "")
	}
	return strings.Join(items[:len(items)-1], ", ") + " or " + items[len(items)-1]
}

// secrets are openmax's own credential values, which no tool result may
// carry (core.Engine.Secrets): those of its environment's credential
// variables (redact.Credentials, the same set hooks never see) and every
// registered wire's credentials as Deps reads them (codec.CredentialEnv).
// None when the keys are placeholders (a replay, whose recorded results
// were scrubbed when recorded).
func secrets(d Deps) []string {
	if d.PlaceholderKeys {
		return nil
	}
	vals := redact.Credentials(os.Environ())
	for _, env := range codec.CredentialEnv() {
		vals = append(vals, d.getenv(env))
	}
	return redact.Secrets(vals...)
}

// configError keeps a constructor's message but never a key.
func configError(err error) error {
	if errors.Is(err, provider.ErrMissingKey) {
		return fmt.Errorf("missing API key")
	}
	return err
}
