// Package procmem reads the memory figures of a process from /proc
// (Linux): the peak resident set a bench reports for a child, so that
// each loader's memory is its own.
package procmem

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// PeakRSS is the peak resident set (VmHWM) of process pid, in bytes; pid
// 0 is this process. A bench reads it from the child's own /proc entry
// while the child is alive: the rusage of a child started with vfork
// (as os/exec starts them) counts the parent's pages it shared before
// exec.
func PeakRSS(pid int) (int64, error) {
	return field(pid, "VmHWM:")
}

// Available is the memory the kernel reports as available for new work
// (MemAvailable), in bytes.
func Available() (int64, error) {
	return meminfo("/proc/meminfo", "MemAvailable:")
}

func field(pid int, name string) (int64, error) {
	path := "/proc/self/status"
	if pid != 0 {
		path = fmt.Sprintf("/proc/%d/status", pid)
	}
	return meminfo(path, name)
}

// meminfo reads one "Name:   123 kB" line of a /proc file, in bytes.
func meminfo(path, name string) (int64, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	for _, l := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(l, name); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("%s in %s: %w", name, path, err)
			}
			return kb << 10, nil
		}
	}
	return 0, errors.New("no " + name + " in " + path)
}
