package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"

	"github.com/openmax/openmax/provider"
	"github.com/openmax/openmax/provider/anthropic"
	"github.com/openmax/openmax/provider/echo"
	"github.com/openmax/openmax/provider/fake"
	"github.com/openmax/openmax/provider/httpx"
	"github.com/openmax/openmax/provider/openai"
	"github.com/openmax/openmax/provider/retry"
	"github.com/openmax/openmax/provider/script"
	"github.com/openmax/openmax/recorder"
	"github.com/openmax/openmax/replay"
)

// Default models when --model is not given.
const (
	defaultOpenAIModel    = "gpt-4o-mini"
	defaultAnthropicModel = "claude-sonnet-4-5"
)

// newProvider builds the provider the flags name, wrapped in the retry
// policy, and the context window to report (0 for the default). Errors are
// configuration mistakes, reported before the handshake.
func newProvider(o *options, e env) (provider.Provider, int, error) {
	hc := &httpx.Client{HTTP: &http.Client{Transport: e.transport}, Clock: e.clock, IdleTimeout: o.idleTimeout}
	var inner provider.Provider
	window := 0
	switch o.provider {
	case "echo", "script":
		if o.baseURL != "" {
			return nil, 0, fmt.Errorf("--base-url is only for --provider openai or anthropic")
		}
	}
	switch o.provider {
	case "openai":
		key := e.env("OPENAI_API_KEY")
		if key == "" {
			return nil, 0, fmt.Errorf("--provider openai needs an API key: set OPENAI_API_KEY")
		}
		base := firstNonEmpty(o.baseURL, e.env("OPENAI_BASE_URL"))
		c, err := openai.New(openai.Config{APIKey: key, BaseURL: base, Model: firstNonEmpty(o.model, defaultOpenAIModel), HTTP: hc})
		if err != nil {
			return nil, 0, configError(err)
		}
		inner = c
	case "anthropic":
		key := e.env("ANTHROPIC_API_KEY")
		if key == "" {
			return nil, 0, fmt.Errorf("--provider anthropic needs an API key: set ANTHROPIC_API_KEY")
		}
		base := firstNonEmpty(o.baseURL, e.env("ANTHROPIC_BASE_URL"))
		c, err := anthropic.New(anthropic.Config{APIKey: key, BaseURL: base, Model: firstNonEmpty(o.model, defaultAnthropicModel), HTTP: hc})
		if err != nil {
			return nil, 0, configError(err)
		}
		inner = c
	case "echo":
		if o.script != "" {
			return nil, 0, fmt.Errorf("--script is only for --provider script")
		}
		return echo.Provider{}, 0, nil
	case "script":
		if o.script == "" {
			return nil, 0, fmt.Errorf("--provider script needs --script FILE")
		}
		sc, err := script.Load(o.script)
		if err != nil {
			return nil, 0, err
		}
		inner, window = script.New(sc, e.clock), sc.ContextTokens
	case "":
		return nil, 0, fmt.Errorf("--stdio needs --provider (openai, anthropic, echo or script)")
	default:
		return nil, 0, fmt.Errorf("unknown --provider %q (known: openai, anthropic, echo, script)", o.provider)
	}
	return retry.New(inner, retry.Policy{MaxAttempts: o.maxAttempts, Seed: e.seed}, e.clock), window, nil
}

// configError keeps a constructor's message but never a key.
func configError(err error) error {
	if errors.Is(err, provider.ErrMissingKey) {
		return fmt.Errorf("missing API key")
	}
	return err
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if strings.TrimSpace(v) != "" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// runFakeProvider serves a scenario as a fake OpenAI/Anthropic API until
// ctx ends (SIGINT/SIGTERM), printing its base URL as the first stdout line.
func runFakeProvider(ctx context.Context, args []string, stdout, stderr io.Writer, e env) int {
	fs := flag.NewFlagSet("openmax fake-provider", flag.ContinueOnError)
	fs.SetOutput(stderr)
	scenario := fs.String("scenario", "", "the scenario file (YAML) scripting each response in order")
	cassettePath := fs.String("cassette", "", "serve a recorded cassette instead, with its recorded pacing and faults")
	paceFlag := fs.String("pace", "recorded", "with --cassette: instant, recorded, or xN")
	addr := fs.String("addr", "127.0.0.1:0", "the address to listen on")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "openmax fake-provider: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	if (*scenario == "") == (*cassettePath == "") {
		fmt.Fprintln(stderr, "openmax fake-provider: give --scenario FILE or --cassette FILE (one of them)")
		return 2
	}
	if *cassettePath != "" {
		return serveCassette(ctx, *cassettePath, *paceFlag, *addr, stdout, stderr, e)
	}
	sc, err := script.Load(*scenario)
	if err != nil {
		fmt.Fprintf(stderr, "openmax fake-provider: %v\n", err)
		return 2
	}
	srv := fake.New(sc, fake.Options{Clock: e.clock})
	base, err := srv.Start(*addr)
	if err != nil {
		fmt.Fprintf(stderr, "openmax fake-provider: %v\n", err)
		return 1
	}
	fmt.Fprintln(stdout, base)
	<-ctx.Done()
	if err := srv.Close(); err != nil {
		fmt.Fprintf(stderr, "openmax fake-provider: %v\n", err)
		return 1
	}
	return 0
}

// serveCassette serves a recording over HTTP with its pacing and faults,
// so any process can be tested against it.
func serveCassette(ctx context.Context, path, paceFlag, addr string, stdout, stderr io.Writer, e env) int {
	f, err := loadCassette(path, "openmax fake-provider", stderr)
	if err != nil {
		fmt.Fprintf(stderr, "openmax fake-provider: %v\n", err)
		return 2
	}
	pace, err := replay.ParsePace(paceFlag)
	if err != nil {
		fmt.Fprintf(stderr, "openmax fake-provider: %v\n", err)
		return 2
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintf(stderr, "openmax fake-provider: %v\n", err)
		return 1
	}
	h := replay.NewHandler(f, replay.Options{Clock: e.clock, Pace: pace, Ignore: []string{"tools"}, Scrub: recorder.ScrubFunc(nil)})
	srv := &http.Server{Handler: h}
	go srv.Serve(l)
	fmt.Fprintf(stdout, "http://%s\n", l.Addr())
	<-ctx.Done()
	srv.Close()
	return 0
}
