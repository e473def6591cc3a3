#!/usr/bin/env bash
# bench/sweep.sh: `openmax cassette sweep` over the library through the
# binary, with 1 and with N workers (N = the machine's cores), interleaved,
# RUNS times each; prints the medians: variants/s, the speed-up of N
# workers over one, and the cores kept busy (CPU time / wall) beside the
# machine's limit. With BASE=<git rev>, the binary built from that revision
# runs in the same interleaved loop, for a before/after. A manual
# measurement script: not part of CI.
#
# Three sizes, so the rate shows whether the sweep stays linear in its
# variants: --max-variants 3, 10 and 400 (the default, which takes every variant of the library) (SIZES).
#
# Knobs: RUNS=5 DIR=cassettes SIZES="3 10 400" BASE= KEEP=0
set -euo pipefail
RUNS=${RUNS:-5}
DIR=${DIR:-cassettes}
SIZES=${SIZES:-3 10 400}
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
declare -A rate cpu count
for ((r = 0; r < RUNS; r++)); do
	for size in $SIZES; do
		for b in "${bins[@]}"; do
			for p in 1 "$cores"; do
				/usr/bin/env time -f "%e %U %S" -o "$tmp/time" "$tmp/$b" cassette sweep "$DIR" --parallel "$p" --max-variants "$size" >/dev/null 2>"$tmp/err" || fail "$b sweep --parallel $p: $(tail -3 "$tmp/err")"
				read -r e u s <"$tmp/time"
				n=$(grep -o '[0-9]* variants over' "$tmp/err" | cut -d' ' -f1)
				count[$size]=$n
				rate[$size,$b,$p]+="$(calc "\"%.0f\", $n / $e") "
				cpu[$size,$b,$p]+="$(calc "\"%.3f\", ($u + $s) / $e") "
			done
		done
	done
done
printf '%-9s %-14s %8s %12s %10s %8s %11s %s\n' variants binary workers "variants/s" "speed-up" target "cores busy" "limit"
for size in $SIZES; do
	for b in "${bins[@]}"; do
		one=$(median ${rate[$size,$b,1]})
		for p in 1 "$cores"; do
			v=$(median ${rate[$size,$b,$p]})
			target=""
			[[ $p == 1 ]] || target=">=1.80x"
			printf '%-9s %-14s %8s %12s %10s %8s %11s %s\n' "${count[$size]}" "$b" "$p" "$v" "$(calc "\"%.2fx\", $v / $one")" "$target" "$(median ${cpu[$size,$b,$p]})" "$cores cores (>=$(calc "\"%.2f\", 0.9 * $cores"))"
		done
	done
done
