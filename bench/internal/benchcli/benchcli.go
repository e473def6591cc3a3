// Package benchcli holds what the bench commands share: running one of
// their modes from the command line, and splitting a mode's flags from the
// command it times (after "--").
package benchcli

import (
	"errors"
	"flag"
	"fmt"
	"os"
)

// Main runs the mode os.Args[1] names with the arguments after it; an
// unknown or missing mode prints usage and exits 2, a failure prints it
// as name: error and exits 1.
func Main(name, usage string, modes map[string]func(args []string) error) {
	if len(os.Args) < 2 || modes[os.Args[1]] == nil {
		fmt.Fprintln(os.Stderr, "usage: "+usage)
		os.Exit(2)
	}
	if err := modes[os.Args[1]](os.Args[2:]); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		os.Exit(1)
	}
}

// Command parses a mode's flags from args and returns the command after
// them (after "--"), which must not be empty.
func Command(fs *flag.FlagSet, args []string) ([]string, error) {
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if len(fs.Args()) == 0 {
		return nil, errors.New("no command to run (put it after --)")
	}
	return fs.Args(), nil
}
