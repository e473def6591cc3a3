#!/usr/bin/env bash
# bench/check.sh: manual measurement of `openmax --check --stdio` (issue 11),
# never run in CI (it refuses when CI is set; OPENMAX_BENCH_FORCE=1 overrides).
#
#   1. throughput on valid stdout streams of 20 MB, 200 MB and 1 GB (bench/gen
#      stream), beside `jq -c .` and `wc -l` on the same file, each the median
#      of RUNS runs taken interleaved (ours, jq, wc, ours, jq, wc, ...), so the
#      ratio to jq holds even when the machine is shared;
#   2. peak RSS of --check fed hello, one LONG_LINE_BYTES line (1 GiB: past the
#      64 MiB the checker reads whole), then budget and done: the long line must
#      be one violation and the two lines after it must still be checked ok.
#      Measured with /usr/bin/time -v (getrusage of the child), beside the
#      8 MiB line cap and the 32 MiB target.
#
# Knobs (environment): SIZES_MB="20 200 1000" RUNS=3 LONG_LINE_BYTES=1073741824
# BASELINE=/path/to/an/older/openmax (timed beside ours, e.g. a build of the
# previous commit) KEEP=0 (KEEP=1 keeps the temp dir; the inputs take ~1.3 GB).
#
# Usage: bench/check.sh            (from anywhere in the repository)
set -euo pipefail

SIZES_MB=${SIZES_MB:-20 200 1000}
RUNS=${RUNS:-3}
LONG_LINE_BYTES=${LONG_LINE_BYTES:-1073741824}
BASELINE=${BASELINE:-}
KEEP=${KEEP:-0}

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
bench_setup check.sh

export GOPROXY=off GOTOOLCHAIN=local GOFLAGS=${GOFLAGS:-}
echo "== building into $tmp"
go build -o "$tmp/openmax" ./cmd/openmax ||
	fail "go build (GOPROXY=off: run 'go mod download' once if modules are missing)"
go build -o "$tmp/gen" ./bench/gen
om=$tmp/openmax

cpu=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo 2>/dev/null || true)
echo "== machine: $(uname -srm), nproc $(nproc), ${cpu:-unknown CPU}, $(go version)"
if commit=$(git rev-parse --short HEAD 2>/dev/null); then
	git diff --quiet HEAD -- cmd core bench 2>/dev/null || commit+=" (with uncommitted changes)"
else
	commit="? (not a git checkout)"
fi
echo "   commit $commit"
have_jq=0
if command -v jq >/dev/null 2>&1; then
	have_jq=1
	echo "   peer: $(jq --version) ($(command -v jq))"
else
	echo "   jq is not installed: its column says absent (apt-get install -y jq to add it)"
fi
[[ -z $BASELINE ]] || echo "   baseline: $BASELINE"

run_check() { # FILE BIN -> seconds; fails unless every line was ok
	local t0 t1 rc=0
	t0=$(now)
	"$2" --check --stdio <"$1" >"$tmp/verdicts" 2>"$tmp/check.err" || rc=$?
	t1=$(now)
	[[ $rc == 0 ]] || fail "$2 --check exited $rc on a valid stream: $(grep -v ': ok$' "$tmp/verdicts" | head -3)"
	secs "$t0" "$t1"
}

echo "== 1. --check --stdio throughput on valid streams (median of $RUNS interleaved runs)"
printf '   %-9s %-7s %-9s | %-18s %-18s %-18s %-18s | %s\n' size lines MB ours jq "wc -l" baseline "ours/jq"
for mb in $SIZES_MB; do
	f=$tmp/stream-$mb.jsonl
	"$tmp/gen" stream -mb "$mb" >"$f"
	bytes=$(wc -c <"$f")
	lines=$(wc -l <"$f")
	cat "$f" >/dev/null # warm the page cache
	ours=() jqs=() wcs=() bases=()
	for ((r = 1; r <= RUNS; r++)); do
		ours+=("$(run_check "$f" "$om")")
		nv=$(wc -l <"$tmp/verdicts")
		[[ $nv == "$lines" ]] || fail "--check printed $nv verdicts for $lines lines"
		if [[ $have_jq == 1 ]]; then
			t0=$(now)
			jq -c . <"$f" >/dev/null || fail "jq failed on the stream"
			t1=$(now)
			jqs+=("$(secs "$t0" "$t1")")
		fi
		t0=$(now)
		wc -l <"$f" >/dev/null
		t1=$(now)
		wcs+=("$(secs "$t0" "$t1")")
		[[ -z $BASELINE ]] || bases+=("$(run_check "$f" "$BASELINE")")
	done
	rate() { calc "\"%.3fs %6.1f MB/s\", $1, $bytes / 1e6 / ($1 > 0 ? $1 : 0.001)"; }
	o=$(median "${ours[@]}")
	w=$(median "${wcs[@]}")
	j="absent" ratio="(no jq)"
	if [[ $have_jq == 1 ]]; then
		js=$(median "${jqs[@]}")
		j=$(rate "$js")
		ratio=$(calc "\"%.1fx jq\", $js / $o")
	fi
	b="-"
	[[ -z $BASELINE ]] || b=$(rate "$(median "${bases[@]}")")
	printf '   %-9s %-7s %-9s | %-18s %-18s %-18s %-18s | %s\n' "${mb}MB" "$lines" "$(calc "\"%.1f\", $bytes / 1e6")" \
		"$(rate "$o")" "$j" "$(rate "$w")" "$b" "$ratio"
	rm -f "$f"
done

echo "== 2. peak RSS of --check on hello + one $LONG_LINE_BYTES-byte line + budget + done"
if ! /usr/bin/time -v true >/dev/null 2>&1; then
	echo "   /usr/bin/time is missing (apt-get install -y time): skipped"
	exit 0
fi
hello='{"type":"hello","proto":"openmax-stdio/6","protocol_version":6,"session_id":"s","version":"0.1.0","project":"/p","continued":false}'
budget='{"session_id":"s","type":"budget","used_tokens":1,"context_tokens":10}'
done_line='{"session_id":"s","type":"done","stop_reason":"stop"}'
rss_run() { # BIN -> "KB seconds"; checks the verdicts
	local rc=0 t0 t1
	t0=$(now)
	{
		echo "$hello"
		head -c "$LONG_LINE_BYTES" /dev/zero | tr '\0' a
		printf '\n%s\n%s\n' "$budget" "$done_line"
	} | /usr/bin/time -v -o "$tmp/rss.time" "$1" --check --stdio >"$tmp/verdicts" 2>/dev/null || rc=$?
	t1=$(now)
	[[ $rc == 1 ]] || fail "$1: want exit 1 (one violation), got $rc"
	want=$(printf '1: ok\n2: %d bytes: longer than the checker reads (64 MiB)\n3: ok\n4: ok' "$LONG_LINE_BYTES")
	[[ $(cat "$tmp/verdicts") == "$want" ]] || fail "$1: verdicts $(head -c 400 "$tmp/verdicts")"
	echo "$(awk -F': *' '/Maximum resident set size/ { print $2 }' "$tmp/rss.time") $(secs "$t0" "$t1")"
}
read -r kb s <<<"$(rss_run "$om")"
echo "   ours:     peak RSS $(calc "\"%.1f\", $kb / 1024") MiB in $s s (verdicts: ok, one over-long line, ok, ok); target <= 32 MiB; line cap 8 MiB"
if [[ -n $BASELINE ]]; then
	read -r kb s <<<"$(rss_run "$BASELINE")"
	echo "   baseline: peak RSS $(calc "\"%.1f\", $kb / 1024") MiB in $s s"
fi
