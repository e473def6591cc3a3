package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/openmax/openmax/provider"
	"github.com/openmax/openmax/provider/anthropic"
	"github.com/openmax/openmax/provider/echo"
	"github.com/openmax/openmax/provider/fake"
	"github.com/openmax/openmax/provider/httpx"
	"github.com/openmax/openmax/provider/openai"
	"github.com/openmax/openmax/provider/redact"
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
	hc := &httpx.Client{HTTP: &http.Client{Transport: e.transport}, Clock: e.clock, IdleTimeout: o.idleTimeout,
		HeaderTimeout: o.headerTimeout, ReplyTimeout: o.replyTimeout, MaxReplyBytes: int64(o.maxReplyBytes)}
	var inner provider.Provider
	var key string // the secret the replies must never carry
	window := 0
	switch o.provider {
	case "echo", "script":
		if o.baseURL != "" {
			return nil, 0, fmt.Errorf("--base-url is only for --provider openai or anthropic")
		}
	}
	switch o.provider {
	case "openai":
		key = e.env("OPENAI_API_KEY")
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
		key = e.env("ANTHROPIC_API_KEY")
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
	p := retry.New(inner, retry.Policy{MaxAttempts: o.maxAttempts, Seed: e.seed}, e.clock)
	if !e.placeholderKeys {
		// An upstream that echoes the key must not put it on stdout or
		// into the session file: replies reach the engine redacted.
		return redact.Provider(p, key), window, nil
	}
	return p, window, nil
}

// defaultMaxReplyBytes is --max-reply-bytes's default: twice the body of
// the longest reply a current model streams (128k tokens at about 250
// bytes an OpenAI chunk), and the size of a whole completion the OpenAI
// client accepts.
const defaultMaxReplyBytes = 64 << 20

// byteSize is a flag holding a byte count: a number, optionally with a
// binary unit (KiB, MiB, GiB; K, M, G and KB, MB, GB mean the same).
type byteSize int64

func (b *byteSize) String() string {
	if b == nil {
		return "0"
	}
	if *b == 0 {
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
	c := command{name: "openmax fake-provider", usage: "--scenario FILE | --cassette FILE [--pace P] [--ignore PATH] [--addr HOST:PORT]",
		purpose: "Serve a scripted fake OpenAI/Anthropic API, or a recorded cassette, over HTTP on loopback; prints its base URL on stdout."}
	fs := c.flags()
	scenario := fs.String("scenario", "", "the scenario file (YAML) scripting each response in order")
	cassettePath := fs.String("cassette", "", "serve a recorded cassette instead, with its recorded pacing and faults")
	paceFlag := fs.String("pace", "recorded", "with --cassette: instant, recorded, or xN")
	missDiff := fs.Bool("miss-diff", false, "with --cassette: after each MISS line, print the diff against the nearest recorded request")
	match := addMatchFlags(fs)
	addr := fs.String("addr", "127.0.0.1:0", "the address to listen on")
	pos, code, ok := c.parse(fs, args, stdout, stderr)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		return c.usageError(stderr, "unexpected argument %q", pos[0])
	}
	if (*scenario == "") == (*cassettePath == "") {
		return c.usageError(stderr, "give --scenario FILE or --cassette FILE (one of them)")
	}
	if *cassettePath != "" {
		return serveCassette(ctx, cassetteServing{path: *cassettePath, pace: *paceFlag, addr: *addr, match: match, missDiff: *missDiff}, stdout, stderr, e)
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

// cassetteServing is what `fake-provider --cassette` was asked to do.
type cassetteServing struct {
	path, pace, addr string
	match            *matchFlags
	missDiff         bool
}

// serveCassette serves a recording over HTTP with its pacing and faults,
// so any process can be tested against it. Each request gets one line on
// stderr (served interaction N, or MISS with the nearest interaction and
// what differs); when ctx ends a summary line names the interactions never
// requested. It exits 1 when any request missed.
func serveCassette(ctx context.Context, c cassetteServing, stdout, stderr io.Writer, e env) int {
	f, err := loadCassette(c.path, "openmax fake-provider", stderr)
	if err != nil {
		fmt.Fprintf(stderr, "openmax fake-provider: %v\n", err)
		return 2
	}
	pace, err := replay.ParsePace(c.pace)
	if err != nil {
		fmt.Fprintf(stderr, "openmax fake-provider: %v\n", err)
		return 2
	}
	l, err := net.Listen("tcp", c.addr)
	if err != nil {
		fmt.Fprintf(stderr, "openmax fake-provider: %v\n", err)
		return 1
	}
	var logMu sync.Mutex
	opts := replay.Options{Clock: e.clock, Pace: pace, Scrub: recorder.ScrubFunc(nil), OnRequest: func(ev replay.Event) {
		logMu.Lock()
		defer logMu.Unlock()
		fmt.Fprintf(stderr, "openmax fake-provider: %s\n", ev)
		if c.missDiff && ev.Miss != nil && ev.Miss.Diff != "" {
			for _, line := range strings.Split(strings.TrimRight(ev.Miss.Diff, "\n"), "\n") {
				fmt.Fprintf(stderr, "    %s\n", line)
			}
		}
	}}
	c.match.apply(&opts)
	h := replay.NewHandler(f, opts).(*replay.Handler)
	srv := &http.Server{Handler: h, ErrorLog: log.New(io.Discard, "", 0)}
	go srv.Serve(l) //nolint:errcheck // returns ErrServerClosed on Close
	fmt.Fprintf(stdout, "http://%s\n", l.Addr())
	<-ctx.Done()
	srv.Close()
	logMu.Lock()
	defer logMu.Unlock()
	fmt.Fprintf(stderr, "openmax fake-provider: %s: %s\n", c.path, h.Summary())
	if len(h.Misses()) > 0 {
		return 1
	}
	return 0
}
