package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// command describes a subcommand for its -h/--help and usage errors.
type command struct {
	name    string // "openmax replay"
	usage   string // the synopsis after the name
	purpose string // one line
}

// flags makes the subcommand's flag set. Parse errors are reported by
// parseCommand, not by the flag package.
func (c command) flags() *flag.FlagSet {
	fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
}

// help writes the subcommand's help: synopsis, purpose and every flag.
func (c command) help(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprintf(w, "usage: %s %s\n\n%s\n", c.name, c.usage, c.purpose)
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	if n == 0 {
		return
	}
	fmt.Fprintln(w, "\nflags:")
	fs.SetOutput(w)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
}

// usageError reports a command-line mistake on stderr and returns exit
// code 2.
func (c command) usageError(stderr io.Writer, format string, a ...any) int {
	fmt.Fprintf(stderr, "%s: %s\nusage: %s %s (see %s --help)\n", c.name, fmt.Sprintf(format, a...), c.name, c.usage, c.name)
	return 2
}

// parse parses args, flags before, between or after the positional
// arguments (a lone "--" ends the flags), and returns the positional
// ones. When it returns ok false the caller exits with code: 0 after
// -h/--help (the help on stdout), 2 after a usage error (on stderr).
func (c command) parse(fs *flag.FlagSet, args []string, stdout, stderr io.Writer) (pos []string, code int, ok bool) {
	for len(args) > 0 {
		err := fs.Parse(args)
		if errors.Is(err, flag.ErrHelp) {
			c.help(stdout, fs)
			return nil, 0, false
		}
		if err != nil {
			return nil, c.usageError(stderr, "%v", err), false
		}
		args = fs.Args()
		if len(args) > 0 {
			if args[0] == "--" {
				return append(pos, args[1:]...), 0, true
			}
			pos, args = append(pos, args[0]), args[1:]
		}
	}
	return pos, 0, true
}

// suggest returns the known name closest to got, or "" when none is close.
func suggest(got string, known []string) string {
	best, bestD := "", 3
	for _, k := range known {
		if d := editDistance(strings.ToLower(got), k); d < bestD {
			best, bestD = k, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}
