#!/usr/bin/env bash
# bench/startup.sh: exec → hello of openmax --stdio as users get it, beside
# the process floor and codex app-server. A manual measurement, not part of
# CI (it refuses to run when CI is set; OPENMAX_BENCH_FORCE=1 overrides).
#
# Every run starts a new session (no --session-id: openmax picks a fresh id
# and saves the session, as it does for a user), in two kinds of state
# directory: a new empty one each run (a user's first session) and one kept
# across runs (every day: the sessions pile up). Beside them, interleaved
# round by round so that load from other work falls on all alike:
#   floor    openmax --version (exec, Go runtime start, one line out)
#   unsaved  exec → hello with no state directory (the session in memory):
#            the start without the session store
#   codex    codex app-server: exec → the answer to initialize, when a codex
#            binary is found (CODEX=path, else codex on PATH, else under
#            ${XDG_CACHE_HOME:-~/.cache}/openmax-npm)
# and the Go benchmark of the store's share (Open + Start, beside the fully
# synced Create that hello waited for before), GOBENCH=0 skips it.
#
# Knobs: HELLO_RUNS=50 (rounds) REPEATS=3 (whole interleaved runs; the
# median of their medians is reported) CODEX= GOBENCH=1 KEEP=0.
# The scratch directory is made under TMPDIR: leave it on the file system a
# user's state directory lives on (tmpfs would hide the disk).
set -euo pipefail

HELLO_RUNS=${HELLO_RUNS:-50}
REPEATS=${REPEATS:-3}
GOBENCH=${GOBENCH:-1}
KEEP=${KEEP:-0}

if [[ -n ${CI:-} || -n ${GITHUB_ACTIONS:-} ]] && [[ -z ${OPENMAX_BENCH_FORCE:-} ]]; then
	echo "bench/startup.sh is a manual measurement script; not running under CI (OPENMAX_BENCH_FORCE=1 overrides)" >&2
	exit 0
fi

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/openmax-startup.XXXXXX")
if [[ $KEEP == 1 ]]; then
	echo "keeping $tmp"
else
	trap 'rm -rf "$tmp"' EXIT
fi
fail() { echo "bench: FAIL: $*" >&2; exit 1; }
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
kv() { grep -m1 "^$1=" "$2" | cut -d= -f2-; }

export GOPROXY=off GOTOOLCHAIN=local GOFLAGS=${GOFLAGS:-}
go build -o "$tmp/openmax" ./cmd/openmax ||
	fail "go build (GOPROXY=off: run 'go mod download' once if modules are missing)"
go build -o "$tmp/probe" ./bench/probe

codex=${CODEX:-}
if [[ -z $codex ]]; then
	codex=$(command -v codex 2>/dev/null || true)
fi
if [[ -z $codex ]]; then
	codex=$(ls -1 "${XDG_CACHE_HOME:-$HOME/.cache}"/openmax-npm/*/node_modules/.bin/codex 2>/dev/null | head -1 || true)
fi
codex_args=()
if [[ -n $codex ]]; then
	codex_args=(-codex "$codex")
	codex_note="$codex ($("$codex" --version 2>/dev/null | head -1 || echo '?'))"
else
	codex_note="not installed (no codex on PATH or under ${XDG_CACHE_HOME:-~/.cache}/openmax-npm; the pinned npm lockfile in cmd/openmax/testdata/npm does not include it; CODEX=path adds it)"
fi

echo "== machine: $(uname -srm), nproc $(nproc), $(go version | awk '{ print $3 }'), commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')$(git diff --quiet 2>/dev/null || echo ' (dirty tree)')"
echo "   scratch on $(df -T "$tmp" | awk 'NR == 2 { print $2 }') ($tmp); codex: $codex_note"
echo "== exec → hello, $REPEATS runs of $HELLO_RUNS interleaved rounds"
kinds=(floor fresh existing unsaved)
[[ -n $codex ]] && kinds+=(codex)
for ((r = 1; r <= REPEATS; r++)); do
	"$tmp/probe" startup -n "$HELLO_RUNS" -dir "$tmp/run$r" "${codex_args[@]}" -- "$tmp/openmax" >"$tmp/run$r.kv" ||
		fail "probe startup failed"
	line="   run $r:"
	for k in "${kinds[@]}"; do
		line+=" $k $(kv "${k}_median_ms" "$tmp/run$r.kv")"
	done
	echo "$line ms (medians)"
	rm -rf "$tmp/run$r"
done

# stat KIND KEY: the median over the runs of KIND_KEY
stat() {
	local v=()
	for ((r = 1; r <= REPEATS; r++)); do v+=("$(kv "$1_$2" "$tmp/run$r.kv")"); done
	median "${v[@]}"
}

gb=""
if [[ $GOBENCH == 1 ]]; then
	echo "== go test -bench OpenStart ./core/store (TMPDIR=$tmp: the same file system)"
	TMPDIR=$tmp go test -run '^$' -bench 'OpenStart' -benchtime 200x -count 3 ./core/store >"$tmp/gobench.txt" 2>&1 ||
		{ echo "   go test -bench failed:"; head -5 "$tmp/gobench.txt"; }
	grep '^Benchmark' "$tmp/gobench.txt" | sed 's/^/   /' || true
	gb=$(awk '/^BenchmarkOpenStart/ { n = $1; sub(/^BenchmarkOpenStart\//, "", n); sub(/-[0-9]+$/, "", n); v[n] = v[n] " " $3 / 1e6 } END { for (n in v) print n ":" v[n] }' "$tmp/gobench.txt" | sort)
fi

row() { printf '%-58s %s\n' "$1" "$2"; }
echo
echo "== results (medians of $REPEATS runs × $HELLO_RUNS rounds; 'over floor' is the median per-round difference)"
row "what" "median / p90 (over floor)"
row "----------------------------------------------------------" "------------------------------"
row "openmax --version (the process floor)" "$(stat floor median_ms) / $(stat floor p90_ms) ms"
row "openmax --stdio exec->hello, existing state dir" "$(stat existing median_ms) / $(stat existing p90_ms) ms (+$(stat existing over_floor_ms) ms)"
row "openmax --stdio exec->hello, new state dir each run" "$(stat fresh median_ms) / $(stat fresh p90_ms) ms (+$(stat fresh over_floor_ms) ms)"
row "openmax --stdio exec->hello, not saved (no state dir)" "$(stat unsaved median_ms) / $(stat unsaved p90_ms) ms (+$(stat unsaved over_floor_ms) ms)"
if [[ -n $codex ]]; then
	row "codex app-server exec->initialize answered" "$(stat codex median_ms) / $(stat codex p90_ms) ms"
else
	row "codex app-server exec->initialize answered" "not installed"
fi
row "target" "<= 5 ms median, <= 1 ms over the floor"
if [[ -n $gb ]]; then
	while IFS= read -r l; do
		row "   store ${l%%:*} (Go benchmark, ms/op of 3 runs)" "${l#*:}"
	done <<<"$gb"
fi
