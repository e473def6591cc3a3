package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"

	"github.com/openmax/openmax/core/harness"
	"github.com/openmax/openmax/recorder"
	"github.com/openmax/openmax/recorder/mode"
	"github.com/openmax/openmax/replay/tape"
)

// recordFlags are the flags of `openmax record`; everything else is a
// harness flag passed on as for --stdio.
type recordFlags struct {
	cassette    string
	proxy       bool
	upstream    string
	addr        string
	overwrite   bool
	scrub       []*regexp.Regexp
	mode        mode.Mode // "" when --mode was not given
	fromChange  string    // --from-change CASSETTE
	output      string    // -o FILE, with --from-change
	passthrough mode.Passthrough
}

// splitRecordArgs takes record's own flags out of args.
func splitRecordArgs(args []string) (recordFlags, []string, error) {
	rf := recordFlags{addr: "127.0.0.1:0"}
	var rest []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, val, hasVal := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") {
			rest = append(rest, a)
			continue
		}
		takeVal := func() (string, error) {
			if hasVal {
				return val, nil
			}
			if i+1 >= len(args) {
				return "", fmt.Errorf("%w: flag --%s needs a value", errUsage, name)
			}
			i++
			return args[i], nil
		}
		var err error
		switch name {
		case "cassette":
			rf.cassette, err = takeVal()
		case "upstream":
			rf.upstream, err = takeVal()
		case "addr":
			rf.addr, err = takeVal()
		case "scrub":
			var pat string
			if pat, err = takeVal(); err == nil {
				var re *regexp.Regexp
				if re, err = regexp.Compile(pat); err != nil {
					err = fmt.Errorf("%w: --scrub %q: %v", errUsage, pat, err)
				} else {
					rf.scrub = append(rf.scrub, re)
				}
			}
		case "mode":
			var v string
			if v, err = takeVal(); err == nil {
				if rf.mode, err = mode.Parse(v); err != nil {
					err = fmt.Errorf("%w: --mode: %v", errUsage, err)
				}
			}
		case "from-change":
			rf.fromChange, err = takeVal()
		case "o", "output":
			rf.output, err = takeVal()
		case "passthrough":
			var v string
			if v, err = takeVal(); err == nil {
				if err = rf.passthrough.Add(v); err != nil {
					err = fmt.Errorf("%w: --passthrough: %v", errUsage, err)
				}
			}
		case "proxy":
			rf.proxy, err = boolFlag(name, val, hasVal)
		case "overwrite":
			rf.overwrite, err = boolFlag(name, val, hasVal)
		default:
			rest = append(rest, a)
		}
		if err != nil {
			return rf, nil, err
		}
	}
	if rf.cassette == "" && rf.fromChange == "" {
		return rf, nil, fmt.Errorf("%w: record needs --cassette FILE (or --from-change CASSETTE)", errUsage)
	}
	if rf.output != "" && rf.fromChange == "" {
		return rf, nil, fmt.Errorf("%w: -o FILE goes with --from-change (record writes --cassette FILE)", errUsage)
	}
	return rf, rest, nil
}

// runRecord is `openmax record`: the live harness (exactly as --stdio)
// with every provider exchange recorded, or with --proxy a recording
// reverse proxy in front of --upstream.
//
// Every flag, the provider's key and the upstream are checked before the
// cassette path is touched, and an existing cassette is replaced only with
// --overwrite: a mistake on the command line never costs a recording.
func runRecord(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, e env) int {
	for _, a := range args {
		if a == "-h" || a == "-help" || a == "--help" {
			recordHelp(stdout)
			return 0
		}
	}
	rf, rest, err := splitRecordArgs(args)
	if err != nil {
		fmt.Fprintf(stderr, "openmax record: %v\n", err)
		return 2
	}
	if rf.fromChange != "" {
		return runFromChange(ctx, rf, rest, stdout, stderr, e)
	}
	if rf.proxy && len(rf.passthrough) > 0 {
		fmt.Fprintln(stderr, "openmax record --proxy: --passthrough does not go with --proxy (everything a proxy gets is addressed to it)")
		return 2
	}
	if rf.proxy && rf.mode != "" && rf.mode != mode.Refresh {
		fmt.Fprintf(stderr, "openmax record --proxy: --mode %s does not go with --proxy (a proxy records everything: serve a cassette with openmax fake-provider --cassette FILE --mode %s --upstream URL)\n", rf.mode, rf.mode)
		return 2
	}
	switch there := exists(rf.cassette); {
	case rf.mode == mode.Refresh:
		rf.overwrite = true
	case rf.mode == mode.Replay && !there:
		fmt.Fprintf(stderr, "openmax record: no cassette at %s to replay (mode replay never records; --mode once records a missing one)\n", rf.cassette)
		return 1
	case (rf.mode == mode.Replay || rf.mode == mode.Once) && there:
		return runRecordServing(ctx, rf, rest, stdin, stdout, stderr, e)
	case rf.mode == mode.Missing && there:
		return runRecordMissing(ctx, rf, rest, stdin, stdout, stderr, e)
	}
	newRecorder := func() (*recorder.Recorder, error) {
		return recorder.New(recorder.Options{Path: rf.cassette, Transport: e.transport, Clock: e.clock, Scrub: rf.scrub, Overwrite: rf.overwrite})
	}
	if rf.proxy {
		return runRecordProxy(ctx, rf, rest, newRecorder, stdout, stderr)
	}
	o, err := parse(append([]string{"--stdio"}, withoutFlag(rest, "stdio")...), stderr)
	if err != nil {
		fmt.Fprintf(stderr, "openmax record: %v\n", err)
		return 2
	}
	ro := tape.RecordOptions{
		Config: o.cfg, Deps: e.deps(stderr),
		Cassette: recorder.Options{Path: rf.cassette, Scrub: rf.scrub, Overwrite: rf.overwrite},
	}
	if len(rf.passthrough) > 0 {
		ro.Front = func(rec http.RoundTripper) http.RoundTripper { return passing(rf.passthrough, e.transport, rec) }
	}
	code, err := tape.Record(ctx, stdin, stdout, ro)
	if err != nil {
		fmt.Fprintf(stderr, "openmax record: %v\n", err)
		var cerr *harness.ConfigError
		if errors.As(err, &cerr) && !errors.Is(err, harness.ErrBadFile) {
			return 2 // a mistake in the settings; a missing or malformed file is a failure
		}
		return 1
	}
	return code
}

func runRecordProxy(ctx context.Context, rf recordFlags, rest []string, newRecorder func() (*recorder.Recorder, error), stdout, stderr io.Writer) int {
	if len(rest) > 0 {
		fmt.Fprintf(stderr, "openmax record --proxy: unexpected argument %q (a proxy takes only --cassette, --upstream, --addr, --scrub and --overwrite)\n", rest[0])
		return 2
	}
	if rf.upstream == "" {
		fmt.Fprintln(stderr, "openmax record --proxy: --upstream URL is required (the API the proxy forwards to, such as https://api.openai.com)")
		return 2
	}
	up, err := url.Parse(rf.upstream)
	if err != nil || (up.Scheme != "http" && up.Scheme != "https") || up.Host == "" {
		fmt.Fprintf(stderr, "openmax record --proxy: --upstream must be an absolute http(s) URL, got %q\n", rf.upstream)
		return 2
	}
	l, err := net.Listen("tcp", rf.addr)
	if err != nil {
		fmt.Fprintf(stderr, "openmax record --proxy: %v\n", err)
		return 1
	}
	defer l.Close()
	rec, err := newRecorder()
	if err != nil {
		fmt.Fprintf(stderr, "openmax record --proxy: %v\n", err)
		return 1
	}
	srv := &http.Server{Handler: recorder.NewProxy(up, rec)}
	go srv.Serve(l)
	fmt.Fprintf(stdout, "http://%s\n", l.Addr())
	<-ctx.Done()
	srv.Close()
	if err := rec.Close(); err != nil {
		fmt.Fprintf(stderr, "openmax record --proxy: %v\n", err)
		return 1
	}
	return 0
}

// recordHelp is `openmax record --help`: record's own flags; every other
// flag is the harness's, as for --stdio.
func recordHelp(w io.Writer) {
	c := command{name: "openmax record", usage: "--cassette FILE [--mode " + mode.Names() + "] [--overwrite] [--scrub REGEXP] [--passthrough HOST] [HARNESS FLAGS] | --cassette FILE --proxy --upstream URL [--addr HOST:PORT] | --from-change CASSETTE [-o FILE] [--base-url URL]",
		purpose: "Run the live harness on stdin/stdout (exactly as --stdio) recording every provider exchange, scrubbed of keys, and the client's commands;\nor, with --proxy, record any program pointed at a reverse proxy in front of --upstream. An existing cassette is kept unless --overwrite (or --mode).\nWith --from-change, replay a recorded session up to its first changed request and record the rest live."}
	fs := c.flags()
	fs.String("cassette", "", "the cassette file to write (required, but for --from-change)")
	fs.String("mode", "", modeUsage()+"\nWithout --mode, record a new cassette (an existing one needs --overwrite, which is mode refresh).")
	fs.String("from-change", "", "replay this cassette's session until the first request it no longer holds, go live from there, and write the new cassette (in place, or to -o FILE); the interactions before the change stay byte for byte")
	fs.String("o", "", "with --from-change: write the new cassette here instead of in place (an existing file needs --overwrite)")
	fs.String("passthrough", "", "a host whose requests go to the network as they are, neither replayed nor recorded (repeatable)")
	fs.Bool("overwrite", false, "replace the cassette if it exists (without it, an existing file is refused and left as it is)")
	fs.String("scrub", "", "a regular expression whose matches are written as [scrubbed] (repeatable; keys are always scrubbed)")
	fs.Bool("proxy", false, "record a reverse proxy's traffic instead of running the harness")
	fs.String("upstream", "", "with --proxy: the API to forward to, such as https://api.openai.com")
	fs.String("addr", "127.0.0.1:0", "with --proxy: the address to listen on (its URL is printed on stdout)")
	c.help(w, fs)
	fmt.Fprintln(w, "\nEvery other flag is a harness flag, as for openmax --stdio (see openmax --help).")
}

// boolFlag reads a boolean flag given as --name or --name=VALUE.
func boolFlag(name, val string, hasVal bool) (bool, error) {
	if !hasVal {
		return true, nil
	}
	b, err := strconv.ParseBool(val)
	if err != nil {
		return false, fmt.Errorf("%w: --%s=%s: want true or false", errUsage, name, val)
	}
	return b, nil
}

// withoutFlag drops --name (and its separate value, for flags that take
// one) from args.
func withoutFlag(args []string, name string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		n, _, hasVal := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if strings.HasPrefix(a, "-") && n == name {
			if !hasVal && name != "stdio" && i+1 < len(args) {
				i++
			}
			continue
		}
		out = append(out, a)
	}
	return out
}
