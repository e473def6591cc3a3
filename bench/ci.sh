#!/usr/bin/env bash
# bench/ci.sh: the test command CI runs (.ci/test, README's), timed cold
# and warm on a fresh clone, each beside CI's limit of 300 s. A manual
# measurement, not part of CI (it refuses to run when CI is set;
# OPENMAX_BENCH_FORCE=1 overrides).
#
#   cold  a fresh clone of REV, an empty GOCACHE (Go modules, npm packages,
#         Bazel and Chromium already on the machine, as .ci/run leaves them)
#   warm  the same clone and GOCACHE again, right after
#
# For each it prints the wall time beside the limit and the CPU time
# (user + sys of everything the run started): on a machine shared with
# other work the wall time varies from run to run, the CPU time much less;
# on CI's two cores the wall time cannot be under half the CPU time.
# With each it prints how many top-level tests passed, failed and were
# skipped (both stages of .ci/test), and the slowest packages and tests by
# go test's own timings (wall, so load shows in them too).
#
# Knobs: REV=HEAD (any commit; .ci/test of that commit runs) LIMIT=300
# KEEP=0. Takes about 2 x the cold run.
set -euo pipefail

REV=${REV:-HEAD}
LIMIT=${LIMIT:-300}

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
bench_setup ci.sh

commit=$(git rev-parse --verify "$REV^{commit}") || fail "no commit $REV"
git clone -q --no-checkout "$root" "$tmp/clone"
git -C "$tmp/clone" checkout -q "$commit"
export GOCACHE="$tmp/gocache"
mkdir -p "$GOCACHE"
echo "bench/ci.sh: .ci/test of ${commit:0:12} on a fresh clone, $(nproc) cores, GOCACHE empty; load average now $(cut -d' ' -f1-3 /proc/loadavg)"

# timed NAME: runs .ci/test in the clone, its output in $tmp/NAME.log (the
# stage lines shown as they come), and prints the verdict line.
timed() {
	local name=$1 t rc=0
	TIMEFORMAT='%R %U %S'
	{ time (cd "$tmp/clone" && OPENMAX_TEST_JSON="$tmp/$name.json" bash .ci/test >"$tmp/$name.log" 2>&1); } 2>"$tmp/$name.time" || rc=$?
	grep -E '^(== |FAIL)' "$tmp/$name.log" | sed 's/^/    /'
	[[ $rc == 0 ]] || { tail -40 "$tmp/$name.log" >&2; fail "$name run failed (exit $rc)"; }
	read -r wall user sys <"$tmp/$name.time"
	t=$(calc "\"%.0f\", $wall")
	printf '%-5s wall %5s s   limit %s s   %s   CPU %s s (user %.0f + sys %.0f)\n' "$name" "$t" "$LIMIT" \
		"$(awk -v w="$wall" -v l="$LIMIT" 'BEGIN { print (w <= l ? "within" : "OVER") }')" \
		"$(calc "\"%.0f\", $user + $sys")" "$user" "$sys"
}

# tests NAME: how many top-level tests passed, failed and skipped in the
# run (its go test events, when that .ci/test keeps them).
tests() {
	[[ -s $tmp/$1.json ]] || return 0
	grep -o '"Action":"[a-z]*","Package":"[^"]*","Test":"[^"/]*","Elapsed"' "$tmp/$1.json" |
		sed 's/"Action":"\([a-z]*\)".*/\1/' | sort | uniq -c | awk '{ printf "%s%s %s", (NR > 1 ? ", " : "      top-level tests: "), $1, $2 } END { print "" }'
}

# slowest NAME KIND: the five slowest packages (KIND package) or top-level
# tests (KIND test) of the run, by go test's own elapsed seconds (wall).
slowest() {
	[[ -s $tmp/$1.json ]] || return 0
	if [[ $2 == package ]]; then
		grep -o '"Action":"[a-z]*","Package":"[^"]*","Elapsed":[0-9.]*' "$tmp/$1.json"
	else
		grep -o '"Action":"[a-z]*","Package":"[^"]*","Test":"[^"/]*","Elapsed":[0-9.]*' "$tmp/$1.json"
	fi | sed 's/.*"Package":"github.com\/openmax\/openmax\/\([^"]*\)"\(,"Test":"\([^"]*\)"\)\{0,1\},"Elapsed":\([0-9.]*\)/\4 \1 \3/' |
		sort -rn | head -5 | awk -v k="$2" 'NR == 1 { print "      slowest " k "s (go test'"'"'s seconds, wall):" } { printf "        %7.1f s  %s %s\n", $1, $2, $3 }'
}

for run in cold warm; do
	timed "$run"
	tests "$run"
	slowest "$run" package
	slowest "$run" test
done
