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
	"github.com/openmax/openmax/replay/tape"
)

// recordFlags are the flags of `openmax record`; everything else is a
// harness flag passed on as for --stdio.
type recordFlags struct {
	cassette  string
	proxy     bool
	upstream  string
	addr      string
	overwrite bool
	scrub     []*regexp.Regexp
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
	if rf.cassette == "" {
		return rf, nil, fmt.Errorf("%w: record needs --cassette FILE", errUsage)
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
	code, err := tape.Record(ctx, stdin, stdout, tape.RecordOptions{
		Config: o.cfg, Deps: e.deps(stderr),
		Cassette: recorder.Options{Path: rf.cassette, Scrub: rf.scrub, Overwrite: rf.overwrite},
	})
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
	c := command{name: "openmax record", usage: "--cassette FILE [--overwrite] [--scrub REGEXP] [HARNESS FLAGS] | --cassette FILE --proxy --upstream URL [--addr HOST:PORT]",
		purpose: "Run the live harness on stdin/stdout (exactly as --stdio) recording every provider exchange, scrubbed of keys, and the client's commands;\nor, with --proxy, record any program pointed at a reverse proxy in front of --upstream. An existing cassette is kept unless --overwrite."}
	fs := c.flags()
	fs.String("cassette", "", "the cassette file to write (required)")
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
