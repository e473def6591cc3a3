package builtin

import (
	"math"
	"strconv"
	"strings"
)

// The unified diff of write_file and edit_file: Myers' O(ND) algorithm on
// lines, after trimming the common prefix and suffix, with three lines of
// context and GNU diff's hunk headers. Lines compare with their line
// endings, so a change of the last line's missing newline is a change of that
// line, marked "\ No newline at end of file" as diff and git do.

const (
	diffContext = 3
	// maxEditDistance bounds the search (memory grows with its square);
	// beyond it the changed middle is reported as removed, then added:
	// still a correct diff, only not a minimal one.
	maxEditDistance = 1000
)

type opKind byte

const (
	opEqual opKind = ' '
	opDel   opKind = '-'
	opIns   opKind = '+'
)

// opPrefix is the diff line prefix of each op kind.
var opPrefix = map[opKind]string{opEqual: " ", opDel: "-", opIns: "+"}

type diffOp struct {
	kind opKind
	a, b int // line indexes in old and new; the one not involved is unused
}

// splitLines splits s after each "\n"; the last line may lack one.
func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	lines := strings.SplitAfter(s, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

// unifiedDiff returns the unified diff turning old into new, with the file
// headers fromName and toName, and the counts of added and removed lines.
// It returns "" when the contents are equal.
func unifiedDiff(fromName, toName, old, new string) (diff string, added, removed int) {
	return unifiedDiffCap(fromName, toName, old, new, math.MaxInt)
}

// unifiedDiffCap is unifiedDiff cut at a line boundary once it reaches
// capBytes, ending with a note saying how much there was; the counts are
// always whole.
func unifiedDiffCap(fromName, toName, old, new string, capBytes int) (diff string, added, removed int) {
	a, b := splitLines(old), splitLines(new)
	ops := diffLines(a, b)
	for _, o := range ops {
		switch o.kind {
		case opIns:
			added++
		case opDel:
			removed++
		}
	}
	if added == 0 && removed == 0 {
		return "", 0, 0
	}
	out := lineCap{cap: capBytes, what: "diff"}
	out.add("--- " + fromName + "\n")
	out.add("+++ " + toName + "\n")
	for _, h := range hunks(ops) {
		writeHunk(&out, ops[h[0]:h[1]], a, b)
	}
	return out.String(""), added, removed
}

// diffLines returns an edit script turning a into b.
func diffLines(a, b []string) []diffOp {
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	// Equal lines further than diffContext from a change are in no hunk:
	// only the context of the common prefix and suffix is kept.
	keepPre, keepSuf := min(pre, diffContext), min(suf, diffContext)
	ops := make([]diffOp, 0, keepPre+keepSuf+len(a)+len(b)-2*(pre+suf))
	for i := pre - keepPre; i < pre; i++ {
		ops = append(ops, diffOp{opEqual, i, i})
	}
	ma, mb := intern(a[pre:len(a)-suf], b[pre:len(b)-suf])
	mid, ok := myers(ma, mb)
	if !ok {
		mid = mid[:0]
		for i := range ma {
			mid = append(mid, diffOp{kind: opDel, a: i})
		}
		for j := range mb {
			mid = append(mid, diffOp{kind: opIns, a: len(ma), b: j})
		}
	}
	for _, o := range mid {
		o.a += pre
		o.b += pre
		ops = append(ops, o)
	}
	for i := 0; i < keepSuf; i++ {
		ops = append(ops, diffOp{opEqual, len(a) - suf + i, len(b) - suf + i})
	}
	return ops
}

// intern numbers the distinct lines of a and b, for faster comparison.
func intern(a, b []string) (ia, ib []int) {
	ids := make(map[string]int, len(a)+len(b))
	number := func(lines []string) []int {
		out := make([]int, len(lines))
		for i, l := range lines {
			id, ok := ids[l]
			if !ok {
				id = len(ids)
				ids[l] = id
			}
			out[i] = id
		}
		return out
	}
	return number(a), number(b)
}

// myers finds a shortest edit script turning a into b, or reports false
// when it needs more than maxEditDistance edits.
func myers(a, b []int) ([]diffOp, bool) {
	n, m := len(a), len(b)
	// vs[d][k+d] is the furthest x reached on diagonal k (x-y) with d
	// edits, or -1 when the diagonal cannot be reached inside the grid.
	var vs [][]int
	for d := 0; d <= n+m; d++ {
		if d > maxEditDistance {
			return nil, false
		}
		v := make([]int, 2*d+1)
		for k := -d; k <= d; k += 2 {
			x := 0
			if d > 0 {
				var ok bool
				x, _, ok = myersStep(vs[d-1], d, k, n, m)
				if !ok {
					v[k+d] = -1
					continue
				}
			}
			y := x - k
			for x < n && y < m && a[x] == b[y] {
				x, y = x+1, y+1
			}
			v[k+d] = x
			if x == n && y == m {
				vs = append(vs, v)
				return myersPath(vs, n, m), true
			}
		}
		vs = append(vs, v)
	}
	return nil, true // unreachable: d = n+m always reaches (n, m)
}

// myersStep returns the point on diagonal k after the d-th edit, before its
// snake, from the furthest points prev of step d-1: x, whether the edit was
// an insertion (a move down from diagonal k+1) rather than a deletion (a
// move right from k-1), and whether any such point is inside the grid.
func myersStep(prev []int, d, k, n, m int) (x int, down, ok bool) {
	at := func(k int) int {
		if k < -(d-1) || k > d-1 {
			return -1
		}
		return prev[k+d-1]
	}
	downX, rightX := at(k+1), at(k-1)
	if downX >= 0 && downX-k > m {
		downX = -1
	}
	if rightX >= 0 {
		rightX++
		if rightX > n {
			rightX = -1
		}
	}
	switch {
	case downX < 0 && rightX < 0:
		return 0, false, false
	case downX >= rightX:
		// On a tie the insertion is the later edit: deletions come first.
		return downX, true, true
	default:
		return rightX, false, true
	}
}

// myersPath walks the furthest points back from (n, m) into an edit script.
func myersPath(vs [][]int, n, m int) []diffOp {
	var ops []diffOp
	x, y := n, m
	for d := len(vs) - 1; d > 0; d-- {
		k := x - y
		px, down, _ := myersStep(vs[d-1], d, k, n, m)
		for x > px {
			x, y = x-1, y-1
			ops = append(ops, diffOp{opEqual, x, y})
		}
		if down {
			y--
			ops = append(ops, diffOp{kind: opIns, a: x, b: y})
		} else {
			x--
			ops = append(ops, diffOp{kind: opDel, a: x, b: y})
		}
	}
	for x > 0 {
		x, y = x-1, y-1
		ops = append(ops, diffOp{opEqual, x, y})
	}
	for i, j := 0, len(ops)-1; i < j; i, j = i+1, j-1 {
		ops[i], ops[j] = ops[j], ops[i]
	}
	return ops
}

// hunks returns the [start, end) op ranges of the hunks: each change with
// up to diffContext equal lines around it, changes closer than twice that
// sharing a hunk.
func hunks(ops []diffOp) [][2]int {
	var out [][2]int
	for i := 0; i < len(ops); {
		if ops[i].kind == opEqual {
			i++
			continue
		}
		start := max(0, i-diffContext)
		end := i
		for {
			for end < len(ops) && ops[end].kind != opEqual {
				end++
			}
			// end is an equal op (or the end); look for a near change.
			j := end
			for j < len(ops) && ops[j].kind == opEqual && j-end < 2*diffContext {
				j++
			}
			if j < len(ops) && ops[j].kind != opEqual {
				end = j
				continue
			}
			break
		}
		end = min(len(ops), end+diffContext)
		out = append(out, [2]int{start, end})
		i = end
	}
	return out
}

func writeHunk(out *lineCap, ops []diffOp, a, b []string) {
	// Where the hunk starts in each file, and how many lines it covers.
	aStart, bStart := -1, -1
	aLen, bLen := 0, 0
	for _, o := range ops {
		if o.kind != opIns {
			if aStart < 0 {
				aStart = o.a
			}
			aLen++
		}
		if o.kind != opDel {
			if bStart < 0 {
				bStart = o.b
			}
			bLen++
		}
	}
	// A side with no lines is named by the line before the hunk: the
	// position the first op would have on it.
	if aStart < 0 {
		aStart = ops[0].a - 1
	}
	if bStart < 0 {
		bStart = ops[0].b - 1
	}
	out.add("@@ -" + hunkRange(aStart, aLen) + " +" + hunkRange(bStart, bLen) + " @@\n")
	for _, o := range ops {
		line := ""
		switch o.kind {
		case opDel:
			line = a[o.a]
		default:
			line = b[o.b]
		}
		out.addLine(opPrefix[o.kind], line)
		if !strings.HasSuffix(line, "\n") {
			out.add("\\ No newline at end of file\n")
		}
	}
}

// hunkRange formats one side of a hunk header the way GNU diff does: start
// is 0-based; a one-line range has no length, an empty one names the line
// before it.
func hunkRange(start, n int) string {
	switch n {
	case 0:
		return strconv.Itoa(start+1) + ",0"
	case 1:
		return strconv.Itoa(start + 1)
	}
	return strconv.Itoa(start+1) + "," + strconv.Itoa(n)
}
