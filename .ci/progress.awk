# progress.awk reads `go test -json` and prints what plain `go test` would,
# but each package's result line as soon as that package finishes (plain
# `go test` holds every result back until the packages listed before it are
# done, so one slow package early in the list hides all progress). A failing
# test's whole output is printed when it fails; passing tests print nothing.
# Build and vet errors are printed as they come.
#
# It relies on the event format of cmd/test2json (one JSON object a line,
# fields in the order Time, Action, Package, Test, Elapsed, Output) and
# needs only POSIX awk, so CI compiles nothing to show progress.

# field returns the JSON string value of key in line, unescaped, or "".
function field(line, key,    i, s, out, c, n) {
	i = index(line, "\"" key "\":\"")
	if (i == 0) return ""
	s = substr(line, i + length(key) + 4)
	out = ""
	n = length(s)
	for (i = 1; i <= n; i++) {
		c = substr(s, i, 1)
		if (c == "\"") break
		if (c != "\\") { out = out c; continue }
		i++
		c = substr(s, i, 1)
		if (c == "n") out = out "\n"
		else if (c == "t") out = out "\t"
		else if (c == "r") out = out "\r"
		else if (c == "u") {
			out = out unicode(substr(s, i + 1, 4))
			i += 4
		} else out = out c
	}
	return out
}

# unicode renders the few \u escapes Go's encoder writes for ASCII
# characters; anything else prints as a replacement mark.
function unicode(hex) {
	if (hex == "003c") return "<"
	if (hex == "003e") return ">"
	if (hex == "0026") return "&"
	if (hex == "001b") return "\033"
	if (hex ~ /^00[01]/) return " "
	return "?"
}

{
	action = field($0, "Action")
	pkg = field($0, "Package")
	if (pkg == "") pkg = field($0, "ImportPath")
	test = field($0, "Test")
	top = test
	sub(/\/.*/, "", top)
	key = pkg " " top
}

action == "build-output" { printf "%s", field($0, "Output"); fflush(); next }

action == "output" && test == "" {
	out = field($0, "Output")
	# The package's verdict lines; PASS and the -v test lines are noise.
	if (out != "PASS\n" && out != "testing: warning: no tests to run\n" && out !~ /^=== / && out !~ /^--- PASS/) { printf "%s", out; fflush() }
	next
}

action == "output" { held[key] = held[key] field($0, "Output"); next }

(action == "pass" || action == "skip") && test != "" && test == top { delete held[key]; next }

action == "fail" && test != "" && test == top {
	printf "%s", held[key]
	fflush()
	delete held[key]
	next
}

# A package that fails outside a test (a panic, a timeout, a crash) may
# leave a running test's output held: print it with the package's verdict.
action == "fail" && test == "" {
	for (k in held) if (index(k, pkg " ") == 1) { printf "%s", held[k]; delete held[k] }
	fflush()
}
