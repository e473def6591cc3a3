package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/openmax/openmax/core/harness"
)

// isApprove reports whether args ask for `openmax --approve`.
func isApprove(args []string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if strings.HasPrefix(a, "-") && name == "approve" {
			return true
		}
	}
	return false
}

// runApprove is `openmax --approve SOURCE_PATH [SOURCE_PATH...] [--project
// DIR]`: a human at a terminal approves the current bytes of an external
// tool's file, as named by an approval_request's source_path, and sees
// which bytes (the sha an approval_request shows) were approved.
func runApprove(args []string, stdout, stderr io.Writer, e env) int {
	c := command{name: "openmax --approve", usage: "SOURCE_PATH [SOURCE_PATH...] [--project DIR]",
		purpose: "Approve the current bytes of an external tool's file (an approval_request's source_path, relative to the project): " +
			"its next call runs without an unapproved_source request, until the file changes. Check the file before approving it: " +
			"an external tool runs as you, with the environment variables its manifest's env lists."}
	fs := c.flags()
	first := fs.String("approve", "", "the project file to approve (project-relative, or absolute inside the project)")
	project := fs.String("project", "", "the project directory (default: the working directory)")
	pos, code, ok := c.parse(fs, args, stdout, stderr)
	if !ok {
		return code
	}
	paths := pos
	if *first != "" {
		paths = append([]string{*first}, pos...)
	}
	if len(paths) == 0 {
		return c.usageError(stderr, "name the file to approve")
	}
	for _, p := range paths {
		a, err := harness.ApproveSource(*project, p, e.env)
		if err != nil {
			fmt.Fprintf(stderr, "openmax --approve: %v\n", err)
			return 1
		}
		fmt.Fprintf(stdout, "approved %s sha %s (sha256 %s) in %s\n", a.Path, a.Sum[:12], a.Sum, a.Project)
	}
	return 0
}
