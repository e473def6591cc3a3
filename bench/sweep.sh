#!/usr/bin/env bash
# bench/sweep.sh: `openmax cassette sweep` over the library through the
# binary, with 1 and with N workers (N = the machine's cores), interleaved,
# RUNS times each; prints the medians: variants/s, the speed-up of N
# workers over one, and the cores kept busy (CPU time / wall) beside the
# machine's limit. With BASE=<git rev>, the binary built from that revision
# runs in the same interleaved loop, for a before/after. A manual
# measurement script: not part of CI.
#
# Knobs: RUNS=5 DIR=cassettes BASE= KEEP=0
set -euo pipefail
RUNS=${RUNS:-5}
DIR=${DIR:-cassettes}
BASE=${BASE:-}
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
bench_setup sweep.sh
cores=$(nproc)
export GOPROXY=off GOTOOLCHAIN=local
go build -o "$tmp/openmax" ./cmd/openmax || fail "go build"
bins=(openmax)
if [[ -n $BASE ]]; then
	git worktree add -q --detach "$tmp/base" "$BASE" || fail "git worktree add $BASE"
	(cd "$tmp/base" && go build -o "$tmp/base-openmax" ./cmd/openmax) || fail "go build $BASE"
	git worktree remove --force "$tmp/base"
	bins+=(base-openmax)
fi
declare -A rate cpu wall
for ((r = 0; r < RUNS; r++)); do
	for b in "${bins[@]}"; do
		for p in 1 "$cores"; do
			/usr/bin/env time -f "%e %U %S" -o "$tmp/time" "$tmp/$b" cassette sweep "$DIR" --parallel "$p" >/dev/null 2>"$tmp/err" || fail "$b sweep --parallel $p: $(tail -3 "$tmp/err")"
			read -r e u s <"$tmp/time"
			n=$(grep -o '[0-9]* variants over' "$tmp/err" | cut -d' ' -f1)
			rate[$b,$p]+="$(calc "\"%.0f\", $n / $e") "
			cpu[$b,$p]+="$(calc "\"%.3f\", ($u + $s) / $e") "
		done
	done
done
printf '%-14s %8s %14s %14s %10s %14s\n' binary workers "variants/s" "speed-up" "cores busy" "limit (cores)"
for b in "${bins[@]}"; do
	one=$(median ${rate[$b,1]})
	for p in 1 "$cores"; do
		v=$(median ${rate[$b,$p]})
		printf '%-14s %8s %14s %14s %10s %14s\n' "$b" "$p" "$v" "$(calc "\"%.2fx\", $v / $one")" "$(median ${cpu[$b,$p]})" "$cores"
	done
done
