#!/usr/bin/env bash
# bench/tokens.sh: token events through the binary, beside `cat | cat` on
# the same bytes. A manual measurement script: not part of CI, and it
# refuses to run when CI is set (OPENMAX_BENCH_FORCE=1 overrides).
#
# For each size (text chunks of one scripted reply) it runs
#   openmax --stdio --provider script   user -> done, read by bench/tokenrate
#   cat FILE | cat                      the bytes openmax wrote, same reader
#                                       (kept by an untimed run first: the
#                                       timed runs write no copy of stdout)
# (and, with BASE=<git rev>, the openmax built from that revision), RUNS
# times interleaved, and prints the medians side by side. Then the latency
# check: a scenario whose stream pauses after every token must get each
# token line out during the pause (tokenrate pause), and the Go benchmark
# BenchmarkPausedTokenLatency (token part -> line read from an OS pipe,
# beside one write(2) per line on the same pipe).
#
# Everything is local: binaries are built into a temp dir with
# GOPROXY=off/GOTOOLCHAIN=local; config and state live in the temp dir (a
# trusted project of its own), so nothing of yours is read or written.
# Each run saves its session, as `openmax --stdio` does for users
# (NOSAVE=1 reuses one session id, which skips saving).
#
# The summary puts beside each size: the ratio to `cat | cat` against the
# target (>= 0.5 at 200k and 2M), and the wait from the last token line to
# done against its 5 ms limit, with its floors: what `cat | cat` takes for
# the bytes after the last token line (message_done carries the whole
# reply) and one fsync on the state disk (the reply is on disk first).
# Beside them, openmax's CPU time (user + system, all threads) from the
# user command to done, which holds still on a machine whose other load
# moves the wall clock.
#
# Knobs: SIZES="20000 200000 2000000" RUNS=3 BASE= NOSAVE=0 GOBENCH=1 KEEP=0
# Usage: bench/tokens.sh            (from anywhere in the repository)
set -euo pipefail

SIZES=${SIZES:-"20000 200000 2000000"}
RUNS=${RUNS:-3}
BASE=${BASE:-}
NOSAVE=${NOSAVE:-0}
GOBENCH=${GOBENCH:-1}
KEEP=${KEEP:-0}

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
bench_setup tokens.sh

export GOPROXY=off GOTOOLCHAIN=local GOFLAGS=${GOFLAGS:-}
echo "== building into $tmp"
go build -o "$tmp/openmax" ./cmd/openmax ||
	fail "go build (GOPROXY=off: run 'go mod download' once if modules are missing)"
go build -o "$tmp/gen" ./bench/gen
go build -o "$tmp/tokenrate" ./bench/tokenrate
bins=(openmax)
if [[ -n $BASE ]]; then
	mkdir -p "$tmp/base-src"
	git -C "$root" archive "$BASE" | tar -x -C "$tmp/base-src"
	(cd "$tmp/base-src" && go build -o "$tmp/base" ./cmd/openmax) || fail "building $BASE"
	bins+=(base)
fi

export XDG_CONFIG_HOME=$tmp/config XDG_STATE_HOME=$tmp/state
mkdir -p "$tmp/project"
"$tmp/openmax" trust "$tmp/project" >/dev/null
cd "$tmp/project"
sid=()
if [[ $NOSAVE == 1 ]]; then
	sid=(--session-id s-bench)
	"$tmp/openmax" --stdio --provider echo "${sid[@]}" </dev/null >/dev/null # create it once
fi

echo "== machine: $(uname -srm), nproc $(nproc), $(go version | awk '{ print $3 }'), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "   commit $(git -C "$root" rev-parse --short HEAD)$(git -C "$root" diff --quiet -- core bench 2>/dev/null || echo ' (dirty tree)')${BASE:+, base $BASE}"

declare -A res
for n in $SIZES; do
	echo "== $n text chunks, $RUNS runs interleaved"
	"$tmp/gen" scenario -chunks "$n" >"$tmp/s.yaml"
	# The bytes for cat | cat (and --check) come from an untimed run: a timed
	# run reads openmax's stdout as the peer's is read, writing no copy.
	"$tmp/tokenrate" run -o "$tmp/out.openmax" -- "$tmp/openmax" --stdio --provider script --script "$tmp/s.yaml" "${sid[@]}" \
		>"$tmp/kv" 2>"$tmp/err" || fail "openmax: $(cat "$tmp/err")"
	for ((r = 1; r <= RUNS; r++)); do
		for b in "${bins[@]}"; do
			"$tmp/tokenrate" run -- "$tmp/$b" --stdio --provider script --script "$tmp/s.yaml" "${sid[@]}" \
				>"$tmp/kv" 2>"$tmp/err" || fail "$b: $(cat "$tmp/err")"
			[[ $(kv tokens "$tmp/kv") == "$n" ]] || fail "$b wrote $(kv tokens "$tmp/kv") token lines, want $n"
			grep -q '"stop_reason":"stop"' "$tmp/kv" || fail "$b: no done stop: $(kv done "$tmp/kv")"
			ms=$(kv user_to_done_ms "$tmp/kv")
			first=$(kv first_token_ms "$tmp/kv") last=$(kv last_token_ms "$tmp/kv")
			res[$n.$b.ms]+="$ms "
			res[$n.$b.ltd]+="$(kv last_token_to_done_ms "$tmp/kv") "
			res[$n.$b.stream]+="$(calc "\"%.0f\", ($n - 1) / (($last - $first) / 1000)") "
			res[$n.$b.first]+="$first "
			res[$n.$b.cpu]+="$(kv turn_cpu_ms "$tmp/kv") "
			echo "   $b: user->done $ms ms ($(kv tokens_per_s "$tmp/kv") tokens/s), first token $first ms, last $last ms, message_done $(kv message_done_ms "$tmp/kv") ms, last token->done $(kv last_token_to_done_ms "$tmp/kv") ms, CPU $(kv turn_cpu_ms "$tmp/kv") ms"
		done
		"$tmp/tokenrate" cat -in "$tmp/out.openmax" >"$tmp/kv" || fail "cat | cat"
		res[$n.cat.ms]+="$(kv cat_ms "$tmp/kv") "
		res[$n.cat.ltd]+="$(kv cat_last_token_to_done_ms "$tmp/kv") "
		echo "   cat | cat: $(kv cat_ms "$tmp/kv") ms, last token->done $(kv cat_last_token_to_done_ms "$tmp/kv") ms"
		"$tmp/tokenrate" fsync -dir "$XDG_STATE_HOME" >"$tmp/kv" || fail "tokenrate fsync"
		res[$n.fsync]+="$(kv fsync_ms "$tmp/kv") "
	done
	res[$n.bytes]=$(wc -c <"$tmp/out.openmax")
	if [[ $n == 200000 || $SIZES != *200000* ]]; then
		"$tmp/openmax" --check --stdio <"$tmp/out.openmax" >"$tmp/verdicts" ||
			fail "--check rejects openmax's stdout: $(grep -v ': ok$' "$tmp/verdicts" | head -3)"
		echo "   asserted: $n token lines, done stop, stdout passes --check"
	fi
done

echo "== latency: 5 tokens, the stream pausing 200 ms after each"
"$tmp/tokenrate" scenario -chunks 5 -pause 200ms >"$tmp/pause.yaml"
lat_first=() lat_over=() lat_shared=()
for ((r = 1; r <= RUNS; r++)); do
	"$tmp/tokenrate" pause -n 5 -delay 200ms -- "$tmp/openmax" --stdio --provider script --script "$tmp/pause.yaml" "${sid[@]}" \
		>"$tmp/kv" 2>"$tmp/err" || fail "tokenrate pause: $(cat "$tmp/err")"
	lat_first+=("$(kv first_token_ms "$tmp/kv")")
	lat_over+=("$(kv later_token_lag_over_first_ms "$tmp/kv")")
	lat_shared+=("$(kv tokens_sharing_a_read "$tmp/kv")")
	echo "   run $r: user->first token $(kv first_token_ms "$tmp/kv") ms; later tokens at most" \
		"$(kv later_token_lag_over_first_ms "$tmp/kv") ms behind the schedule (the scripted delays' timer overshoot included);" \
		"tokens sharing a read: $(kv tokens_sharing_a_read "$tmp/kv")"
done

gb=""
if [[ $GOBENCH == 1 ]]; then
	echo "== Go benchmarks (go test -run '^\$' -bench 'ServeTokens|PausedTokenLatency' ./core/stdio)"
	(cd "$root" && go test -run '^$' -bench 'ServeTokens/deltas=200000|PausedTokenLatency' -benchtime 2000x -count 1 ./core/stdio) >"$tmp/gobench.txt" 2>&1 ||
		echo "   go test -bench failed: $(grep -v '^Benchmark' "$tmp/gobench.txt" | head -3)"
	grep '^Benchmark' "$tmp/gobench.txt" | sed 's/^/   /' || true
	gb=1
fi

echo
echo "== results (medians of $RUNS; lines/s = token lines / (user -> done); stream = first -> last token line)"
echo "   throughput target: openmax >= 0.5 of cat | cat on the same bytes at 200k and 2M chunks"
echo "   latency limit: last token line -> done <= 5 ms at every size. Between them go message_done, which carries"
echo "   the whole reply (the spec's field), and the fsync that puts the reply on disk first: their floors are"
echo "   what cat | cat takes for the same bytes after the last token line, and one fsync on the state disk"
echo "   turn CPU: openmax's user + system CPU from the user command to done (10 ms ticks), which a loaded machine's wall clock hides"
printf '%-8s %-6s %-22s %-10s %-22s %-7s %-7s %-18s %-6s %-26s %s\n' chunks MB "openmax user->done" stream "cat | cat" ratio target "last token->done" limit "floors: cat | cat, fsync" "turn CPU"
for n in $SIZES; do
	# shellcheck disable=SC2086
	ms=$(median ${res[$n.openmax.ms]}) st=$(median ${res[$n.openmax.stream]}) cm=$(median ${res[$n.cat.ms]})
	# shellcheck disable=SC2086
	ltd=$(median ${res[$n.openmax.ltd]}) cltd=$(median ${res[$n.cat.ltd]}) fs=$(median ${res[$n.fsync]})
	target="-"
	[[ $n -ge 200000 ]] && target=">=0.50"
	# shellcheck disable=SC2086
	cpu=$(median ${res[$n.openmax.cpu]})
	printf '%-8s %-6s %-22s %-10s %-22s %-7s %-7s %-18s %-6s %-26s %s\n' "$n" "$(calc "\"%.1f\", ${res[$n.bytes]} / 1e6")" \
		"$ms ms = $(calc "\"%.2fM/s\", $n / $ms / 1000")" "$(calc "\"%.2fM/s\", $st / 1e6")" \
		"$cm ms = $(calc "\"%.2fM/s\", $n / $cm / 1000")" "$(calc "\"%.2f\", $cm / $ms")" "$target" \
		"$ltd ms" "5 ms" "$cltd ms, $fs ms" "$cpu ms"
	if [[ -n $BASE ]]; then
		# shellcheck disable=SC2086
		bm=$(median ${res[$n.base.ms]}) bs=$(median ${res[$n.base.stream]}) bl=$(median ${res[$n.base.ltd]}) bc=$(median ${res[$n.base.cpu]})
		printf '%-8s %-6s %-22s %-10s %-22s %-7s %-7s %-18s %-6s %-26s %s\n' "  base" "" "$bm ms = $(calc "\"%.2fM/s\", $n / $bm / 1000")" \
			"$(calc "\"%.2fM/s\", $bs / 1e6")" "" "$(calc "\"%.2f\", $cm / $bm")" "" "$bl ms" "" "" "$bc ms"
	fi
done
echo "latency, stream pausing after each token: user->first token $(median "${lat_first[@]}") ms;" \
	"later tokens at most $(median "${lat_over[@]}") ms behind the schedule, timer overshoot included (a held line would be 200 ms);" \
	"tokens sharing a read: $(median "${lat_shared[@]}") (a held line would share one with the next)"
if [[ -n $gb ]]; then
	awk '/^BenchmarkPausedTokenLatency/ { name = $1; sub(/-[0-9]+$/, "", name); sub(/.*\//, "", name);
		for (i = 1; i <= NF; i++) if ($(i+1) ~ /-µs$/) v = v " " $(i+1) " " $i; print "Go " name ":" v; v = "" }' "$tmp/gobench.txt"
fi
