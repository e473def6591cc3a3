// Package linediff is the line diff the replayers show for a miss: the
// HTTP replayer (replay) between a recorded and a live request, the fake
// codex app-server (replay/appserver) between a recorded and a received
// message.
package linediff

import (
	"fmt"
	"strings"
)

// Edit is one line of a line diff.
type Edit struct {
	Op   byte // ' ', '-' (only in a), '+' (only in b)
	Line string
}

// maxDiffCells bounds the LCS table; past it the differing middle is shown
// as removed then added whole.
const maxDiffCells = 4 << 20

// Lines is a line diff of a to b: the common head and tail are kept
// as they are and the middle is aligned by a longest common subsequence.
func Lines(a, b []string) []Edit {
	head := 0
	for head < len(a) && head < len(b) && a[head] == b[head] {
		head++
	}
	tail := 0
	for tail < len(a)-head && tail < len(b)-head && a[len(a)-1-tail] == b[len(b)-1-tail] {
		tail++
	}
	var out []Edit
	for _, l := range a[:head] {
		out = append(out, Edit{' ', l})
	}
	out = append(out, lcs(a[head:len(a)-tail], b[head:len(b)-tail])...)
	for _, l := range a[len(a)-tail:] {
		out = append(out, Edit{' ', l})
	}
	return out
}

func lcs(a, b []string) []Edit {
	n, m := len(a), len(b)
	var out []Edit
	if n == 0 || m == 0 || (n+1)*(m+1) > maxDiffCells {
		for _, l := range a {
			out = append(out, Edit{'-', l})
		}
		for _, l := range b {
			out = append(out, Edit{'+', l})
		}
		return out
	}
	// t[i][j] is the LCS length of a[i:] and b[j:].
	w := m + 1
	t := make([]int32, (n+1)*w)
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if a[i] == b[j] {
				t[i*w+j] = t[(i+1)*w+j+1] + 1
			} else {
				t[i*w+j] = max(t[(i+1)*w+j], t[i*w+j+1])
			}
		}
	}
	i, j := 0, 0
	for i < n && j < m {
		switch {
		case a[i] == b[j]:
			out = append(out, Edit{' ', a[i]})
			i++
			j++
		case t[(i+1)*w+j] >= t[i*w+j+1]:
			out = append(out, Edit{'-', a[i]})
			i++
		default:
			out = append(out, Edit{'+', b[j]})
			j++
		}
	}
	for ; i < n; i++ {
		out = append(out, Edit{'-', a[i]})
	}
	for ; j < m; j++ {
		out = append(out, Edit{'+', b[j]})
	}
	return out
}

// Changes counts the lines a diff removes or adds.
func Changes(ops []Edit) int {
	n := 0
	for _, e := range ops {
		if e.Op != ' ' {
			n++
		}
	}
	return n
}

// Unified renders a diff in unified format with ctx lines of context.
func Unified(ops []Edit, from, to string, ctx int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "--- %s\n+++ %s\n", from, to)
	if Changes(ops) == 0 {
		b.WriteString("(the normalised requests are identical)\n")
		return b.String()
	}
	// aLine[k], bLine[k]: the 1-based line numbers before ops[k].
	aLine := make([]int, len(ops)+1)
	bLine := make([]int, len(ops)+1)
	aLine[0], bLine[0] = 1, 1
	for k, e := range ops {
		aLine[k+1], bLine[k+1] = aLine[k], bLine[k]
		if e.Op != '+' {
			aLine[k+1]++
		}
		if e.Op != '-' {
			bLine[k+1]++
		}
	}
	for k := 0; k < len(ops); {
		if ops[k].Op == ' ' {
			k++
			continue
		}
		// A hunk: from ctx lines before this change to ctx lines after
		// the last change that is within 2*ctx lines of the previous one.
		start := max(0, k-ctx)
		end := k
		for end < len(ops) {
			if ops[end].Op != ' ' {
				end++
				continue
			}
			run := end
			for run < len(ops) && ops[run].Op == ' ' {
				run++
			}
			if run == len(ops) || run-end > 2*ctx {
				end = min(end+ctx, len(ops))
				break
			}
			end = run
		}
		fmt.Fprintf(&b, "@@ -%s +%s @@\n", span(aLine[start], aLine[end]-aLine[start]), span(bLine[start], bLine[end]-bLine[start]))
		for _, e := range ops[start:end] {
			b.WriteByte(e.Op)
			b.WriteString(e.Line)
			b.WriteByte('\n')
		}
		k = end
	}
	return b.String()
}

// span renders a hunk range the way diff -u does.
func span(start, n int) string {
	switch n {
	case 0:
		return fmt.Sprintf("%d,0", start-1)
	case 1:
		return fmt.Sprint(start)
	}
	return fmt.Sprintf("%d,%d", start, n)
}
