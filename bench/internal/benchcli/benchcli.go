// Package benchcli holds what the bench commands share: running one of
// their modes from the command line, splitting a mode's flags from the
// command it times (after "--"), and building the openmax binary.
package benchcli

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
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

// BuildOpenmax builds the openmax binary into dir and returns its path.
func BuildOpenmax(dir string) (string, error) {
	bin := filepath.Join(dir, "openmax")
	build := exec.Command("go", "build", "-o", bin, "github.com/openmax/openmax/cmd/openmax")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return "", fmt.Errorf("go build ./cmd/openmax: %w", err)
	}
	return bin, nil
}

// Binaries returns the openmax binary to time (bin, or one built into dir
// when bin is empty) and this bench's own executable, which a bench re-runs
// as the peer's child process.
func Binaries(bin, dir string) (openmax, self string, err error) {
	if bin == "" {
		if bin, err = BuildOpenmax(dir); err != nil {
			return "", "", err
		}
	}
	self, err = os.Executable()
	return bin, self, err
}

// Ints reads a comma-separated list of positive integers ("50,100"),
// skipping what is not one.
func Ints(s string) []int {
	var out []int
	for _, f := range strings.Split(s, ",") {
		if n, err := strconv.Atoi(strings.TrimSpace(f)); err == nil && n > 0 {
			out = append(out, n)
		}
	}
	return out
}
