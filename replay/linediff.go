package replay

// LineDiff is the line diff the HTTP replayer shows for a miss, for other
// replayers (replay/appserver): a unified diff of a to b with ctx lines of
// context, labelled from and to, and how many lines it removes or adds
// (0 when a and b are equal; the text then says they are identical).
func LineDiff(a, b []string, from, to string, ctx int) (diff string, changed int) {
	ops := diffLines(a, b)
	return unified(ops, from, to, ctx), changes(ops)
}
