#!/usr/bin/env bash
# bench/report.sh: how long `openmax report` takes over the whole recorded
# library (every cassette replayed through the engine, compared with its
# golden file, and its page written), beside the 2 s the report must stay
# under; then cassettes/real and the size of the site. A manual
# measurement, not part of CI (it refuses to run when CI is set;
# OPENMAX_BENCH_FORCE=1 overrides).
#
# Knobs: RUNS=5 (the median is reported) GOBENCH=1 (also run
# BenchmarkLibrary of replay/report) KEEP=0.
set -euo pipefail

RUNS=${RUNS:-5}
GOBENCH=${GOBENCH:-1}
KEEP=${KEEP:-0}
LIMIT=2

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
bench_setup report.sh

export GOPROXY=off GOTOOLCHAIN=local GOFLAGS=${GOFLAGS:-}
go build -o "$tmp/openmax" ./cmd/openmax ||
	fail "go build (GOPROXY=off: run 'go mod download' once if modules are missing)"

measure() { # measure DIR -> the median seconds of RUNS reports of DIR
	local times=() t0 t1
	for ((i = 0; i < RUNS; i++)); do
		rm -rf "$tmp/site"
		t0=$(now)
		"$tmp/openmax" report "$1" --html "$tmp/site" >/dev/null 2>&1 || fail "openmax report $1"
		t1=$(now)
		times+=("$(secs "$t0" "$t1")")
	done
	median "${times[@]}"
}

lib=$(measure cassettes)
n=$(ls cassettes/*.yaml | wc -l)
size=$(du -sk "$tmp/site" | cut -f1)
verdict=$(awk -v t="$lib" -v l="$LIMIT" 'BEGIN { print (t < l) ? "under" : "OVER" }')
printf 'library (%d cassettes): %s s, median of %d  (limit %s s: %s); site %d KiB\n' "$n" "$lib" "$RUNS" "$LIMIT" "$verdict" "$size"
real=$(measure cassettes/real)
printf 'cassettes/real (%d recordings, converted as loaded): %s s\n' "$(ls cassettes/real/*.yaml | wc -l)" "$real"
if [[ $GOBENCH == 1 ]]; then
	go test -run '^$' -bench 'BenchmarkLibrary' -benchtime 5x ./replay/report | grep -E '^Benchmark'
fi
[[ $verdict == under ]] || fail "the library's report took $lib s, over $LIMIT s"
