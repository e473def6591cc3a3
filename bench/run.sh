#!/usr/bin/env bash
# bench/run.sh: manual performance measurements of openmax. Not part of CI,
# and it refuses to run when CI is set (OPENMAX_BENCH_FORCE=1 overrides).
# Everything is local: the binary is built into a temp dir with
# GOPROXY=off/GOTOOLCHAIN=local, and it only talks to openmax over pipes.
#
# It measures:
#   1. openmax --check --stdio throughput on a ~200 MB valid stdout stream,
#      beside jq -c . on the same file (skipped when jq is missing)
#   2. peak RSS of openmax --stdio --provider echo reading a 1 GiB stdin line
#      (and asserts the protocol_error, a working session after it, exit 0)
#   3. token lines per second, scripted provider → stdout, user → done
#   4. exec → hello of a new session over 50 runs (median, p90), beside the
#      floor (openmax --version) and codex app-server when installed
#   5. the Go benchmarks behind 1 and 3 (GOBENCH=0 skips them)
#
# Knobs (environment): STREAM_MB=200 LONG_LINE_BYTES=1073741824 TOKENS=200000
# HELLO_RUNS=50 RUNS=3 (repeats of 1 and 3; the median is reported)
# GOBENCH=1 KEEP=0 (KEEP=1 keeps the temp dir).
#
# Usage: bench/run.sh            (from anywhere in the repository)
set -euo pipefail

STREAM_MB=${STREAM_MB:-200}
LONG_LINE_BYTES=${LONG_LINE_BYTES:-1073741824}
TOKENS=${TOKENS:-200000}
HELLO_RUNS=${HELLO_RUNS:-50}
RUNS=${RUNS:-3}
GOBENCH=${GOBENCH:-1}
KEEP=${KEEP:-0}

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
bench_setup run.sh

export GOPROXY=off GOTOOLCHAIN=local GOFLAGS=${GOFLAGS:-}
echo "== building into $tmp"
go build -o "$tmp/openmax" ./cmd/openmax ||
	fail "go build (GOPROXY=off: run 'go mod download' once if modules are missing)"
go build -o "$tmp/gen" ./bench/gen
go build -o "$tmp/probe" ./bench/probe
om=$tmp/openmax

cpu=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo 2>/dev/null || true)
mem=$(awk '/^MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo 2>/dev/null || true)
echo "== machine: $(uname -srm), nproc $(nproc), ${cpu:-unknown CPU}, ${mem:-? RAM}, $(go version)"
echo "   commit $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo '?')$(git -C "$root" diff --quiet 2>/dev/null || echo ' (dirty tree)')"

# ---- 1. --check --stdio throughput, beside jq ------------------------------
echo "== 1. --check --stdio throughput (${STREAM_MB} MB stream, $RUNS runs)"
stream=$tmp/stream.jsonl
"$tmp/gen" stream -mb "$STREAM_MB" >"$stream"
sbytes=$(wc -c <"$stream")
slines=$(wc -l <"$stream")
smb=$(calc "\"%.1f\", $sbytes / 1e6")
echo "   $stream: $smb MB, $slines lines"
cat "$stream" >/dev/null # warm the page cache
check_times=()
for ((r = 1; r <= RUNS; r++)); do
	t0=$(now)
	rc=0
	"$om" --check --stdio <"$stream" >"$tmp/verdicts" || rc=$?
	t1=$(now)
	[[ $rc == 0 ]] || fail "--check --stdio exited $rc on a valid stream: $(grep -v ': ok$' "$tmp/verdicts" | head -3)"
	nv=$(wc -l <"$tmp/verdicts")
	[[ $nv == "$slines" ]] || fail "--check printed $nv verdicts for $slines lines"
	check_times+=("$(secs "$t0" "$t1")")
	echo "   openmax --check --stdio < stream > verdicts: ${check_times[-1]} s"
done
check_s=$(median "${check_times[@]}")
check_mbs=$(calc "\"%.1f\", $sbytes / 1e6 / $check_s")

jq_mbs="skipped (jq not installed)"
jq_s=""
if command -v jq >/dev/null 2>&1; then
	jq_times=()
	for ((r = 1; r <= RUNS; r++)); do
		t0=$(now)
		jq -c . <"$stream" >/dev/null || fail "jq failed on the stream"
		t1=$(now)
		jq_times+=("$(secs "$t0" "$t1")")
		echo "   jq -c . < stream > /dev/null: ${jq_times[-1]} s"
	done
	jq_s=$(median "${jq_times[@]}")
	jq_mbs=$(calc "\"%.1f\", $sbytes / 1e6 / $jq_s")
	jq_ver=$(jq --version 2>/dev/null || echo jq)
else
	echo "   jq not found: skipping the jq comparison (apt-get install -y jq to add it)"
fi
rm -f "$tmp/verdicts"

# ---- 2. peak RSS on a 1 GiB stdin line -------------------------------------
echo "== 2. peak RSS of openmax --stdio --provider echo on a $LONG_LINE_BYTES-byte stdin line"
if /usr/bin/time -v true >/dev/null 2>&1; then
	rss_tool="/usr/bin/time -v"
else
	rss_tool="rusage via bench/probe (/usr/bin/time missing; apt-get install -y time)"
fi
# serve_rss NAME: serve stdin with the echo provider; stdout to NAME.out,
# stderr to NAME.err, the timing report to NAME.time; prints the exit code.
serve_rss() {
	local rc=0
	if [[ $rss_tool == /usr/bin/time* ]]; then
		/usr/bin/time -v -o "$tmp/$1.time" "$om" --stdio --provider echo --session-id s-bench \
			>"$tmp/$1.out" 2>"$tmp/$1.err" || rc=$?
	else
		"$tmp/probe" rss -- "$om" --stdio --provider echo --session-id s-bench \
			>"$tmp/$1.out" 2>"$tmp/$1.time" || rc=$?
		: >"$tmp/$1.err"
	fi
	echo "$rc"
}
maxrss() { awk -F': *' '/Maximum resident set size/ { print $2 }' "$tmp/$1.time"; }

rc=$(printf '%s\n' '{"cmd":"user","text":"still alive"}' '{"cmd":"quit"}' | serve_rss base) || true
[[ $rc == 0 ]] || fail "baseline session exited $rc: $(cat "$tmp/base.err")"
base_kb=$(maxrss base)

t0=$(now)
rc=$("$tmp/gen" longline -bytes "$LONG_LINE_BYTES" | serve_rss long) || true
t1=$(now)
long_s=$(secs "$t0" "$t1")
long_kb=$(maxrss long)
echo "   gen longline -bytes $LONG_LINE_BYTES | $rss_tool openmax --stdio --provider echo: exit $rc, ${long_s} s"
echo "   stdout: $(wc -l <"$tmp/long.out") lines; stderr: $(wc -c <"$tmp/long.err") bytes"
[[ $rc == 0 ]] || fail "openmax exited $rc after the long line (want a clean exit): $(head -c 500 "$tmp/long.err")"
grep -q "\"type\":\"protocol_error\",\"message\":\"line 1: line is $LONG_LINE_BYTES bytes, longer than" "$tmp/long.out" ||
	fail "no protocol_error for the long line in stdout: $(head -c 500 "$tmp/long.out")"
grep -q '"type":"message_done","text":"still alive"' "$tmp/long.out" ||
	fail "the user command after the long line was not answered"
grep -q '"type":"done","stop_reason":"stop"' "$tmp/long.out" || fail "no done stop after the long line"
"$om" --check --stdio <"$tmp/long.out" >"$tmp/long.verdicts" ||
	fail "--check rejects the long-line session's stdout: $(grep -v ': ok$' "$tmp/long.verdicts")"
echo "   asserted: protocol_error for line 1, 'still alive' answered, done, exit 0, stdout passes --check"
long_mbs=$(calc "\"%.0f\", $LONG_LINE_BYTES / 1048576 / $long_s")

# ---- 3. token lines per second ---------------------------------------------
echo "== 3. token lines/s, scripted provider ($TOKENS text chunks in one reply, $RUNS runs)"
"$tmp/gen" scenario -chunks "$TOKENS" >"$tmp/scenario.yaml"
tok_rates=()
for ((r = 1; r <= RUNS; r++)); do
	"$tmp/probe" tokens -o "$tmp/tokens.out" -- \
		"$om" --stdio --provider script --script "$tmp/scenario.yaml" --session-id s-bench >"$tmp/tokens.kv" ||
		fail "probe tokens failed"
	n=$(kv tokens "$tmp/tokens.kv")
	counted=$(grep -c '"type":"token"' "$tmp/tokens.out" || true)
	[[ $n == "$TOKENS" && $counted == "$TOKENS" ]] || fail "got $n token lines ($counted in the file), want $TOKENS"
	grep -q '"stop_reason":"stop"' "$tmp/tokens.kv" || fail "the turn did not end with done stop: $(kv done "$tmp/tokens.kv")"
	tok_rates+=("$(kv tokens_per_s "$tmp/tokens.kv")")
	echo "   run $r: $(kv tokens "$tmp/tokens.kv") tokens, user→done $(kv user_to_done_ms "$tmp/tokens.kv") ms," \
		"first token $(kv first_token_ms "$tmp/tokens.kv") ms, ${tok_rates[-1]} tokens/s" \
		"(exec→hello incl. loading the scenario: $(kv startup_to_hello_ms "$tmp/tokens.kv") ms)"
done
"$om" --check --stdio <"$tmp/tokens.out" >"$tmp/tokens.verdicts" ||
	fail "--check rejects the token session's stdout: $(grep -v ': ok$' "$tmp/tokens.verdicts" | head -3)"
echo "   asserted: $TOKENS token lines counted, done stop, exit 0, stdout passes --check"
echo "   (bench/tokens.sh measures this beside cat | cat on the same bytes, at three sizes, with the latency check)"
tok_rate=$(median "${tok_rates[@]}")
tok_load=$(kv startup_to_hello_ms "$tmp/tokens.kv")

# ---- 4. exec → hello -------------------------------------------------------
# A new session every run, as users get it: no --session-id (a fixed one is
# in use after the first run, and such a run skips saving the session), in a
# state directory kept across runs and in a new one each run, interleaved
# with the floor (openmax --version) and codex app-server when it is found.
# bench/startup.sh runs this alone, repeated, with the store's Go benchmark.
codex=${CODEX:-$(command -v codex 2>/dev/null || ls -1 "${XDG_CACHE_HOME:-$HOME/.cache}"/openmax-npm/*/node_modules/.bin/codex 2>/dev/null | head -1 || true)}
codex_args=()
[[ -n $codex ]] && codex_args=(-codex "$codex")
echo "== 4. exec → hello of a new session, $HELLO_RUNS interleaved rounds after one warm-up (codex: ${codex:-not installed})"
"$tmp/probe" startup -n "$HELLO_RUNS" -dir "$tmp/startup" "${codex_args[@]}" -- "$om" >"$tmp/hello.kv" ||
	fail "probe startup failed"
sed 's/^/   /' "$tmp/hello.kv"
rm -rf "$tmp/startup"

# ---- 5. Go benchmarks --------------------------------------------------------
gb_check="skipped" gb_tok="skipped"
if [[ $GOBENCH == 1 ]]; then
	echo "== 5. Go benchmarks (go test -run '^\$' -bench ... -benchtime 5x)"
	: >"$tmp/gobench.txt"
	# gobench PATTERN PKG: a failing package (say, a test file mid-edit)
	# is reported, not fatal; the numbers above stand.
	gobench() {
		if ! go test -run '^$' -bench "$1" -benchtime 5x "$2" >"$tmp/gobench.one" 2>&1; then
			echo "   go test -bench '$1' $2 failed:"
			grep -v '^Benchmark' "$tmp/gobench.one" | head -5 | sed 's/^/     /'
		fi
		cat "$tmp/gobench.one" >>"$tmp/gobench.txt"
	}
	gobench 'CheckStream' ./core/wire
	gobench 'ServeTokens|LineReaderLongLine' ./core/stdio
	grep '^Benchmark' "$tmp/gobench.txt" | sed 's/^/   /' || true
	gb_check=$(awk '/^BenchmarkCheckStream\/turns/ { for (i = 1; i <= NF; i++) if ($(i+1) == "MB/s") print $i " MB/s" }' "$tmp/gobench.txt")
	gb_tok=$(awk '/^BenchmarkServeTokens\/deltas=200000/ { for (i = 1; i <= NF; i++) if ($(i+1) == "tokens/s") print $i " tokens/s" }' "$tmp/gobench.txt")
fi

# ---- results -----------------------------------------------------------------
row() { printf '%-52s %s\n' "$1" "$2"; }
echo
echo "== results ($(nproc) CPUs, $(go version | awk '{ print $3 }'))"
row "measurement" "result"
row "----------------------------------------------------" "-------------------------------"
row "1. openmax --check --stdio, $smb MB stream" "$check_mbs MB/s (median ${check_s} s of $RUNS)"
if [[ -n $jq_s ]]; then
	row "   ${jq_ver} -c . on the same file" "$jq_mbs MB/s (median ${jq_s} s of $RUNS)"
else
	row "   jq -c . on the same file" "$jq_mbs"
fi
row "   Go BenchmarkCheckStream/turns" "$gb_check"
row "2. peak RSS, 1 stdin line of $LONG_LINE_BYTES B (echo)" "$(calc "\"%.1f\", $long_kb / 1024") MiB (${long_s} s, ~$long_mbs MiB/s in)"
row "   peak RSS, baseline session (one short turn)" "$(calc "\"%.1f\", $base_kb / 1024") MiB"
row "3. token lines/s, script provider, $TOKENS chunks" "$tok_rate tokens/s (median of $RUNS, user->done)"
row "   exec->hello with that scenario loaded" "$tok_load ms"
row "   Go BenchmarkServeTokens/deltas=200000" "$gb_tok"
row "4. exec->hello, new session, existing state dir" "median $(kv existing_median_ms "$tmp/hello.kv") ms, p90 $(kv existing_p90_ms "$tmp/hello.kv") ms (+$(kv existing_over_floor_ms "$tmp/hello.kv") ms over the floor)"
row "   the same, a new state dir each run" "median $(kv fresh_median_ms "$tmp/hello.kv") ms, p90 $(kv fresh_p90_ms "$tmp/hello.kv") ms (+$(kv fresh_over_floor_ms "$tmp/hello.kv") ms)"
row "   floor: openmax --version" "median $(kv floor_median_ms "$tmp/hello.kv") ms, p90 $(kv floor_p90_ms "$tmp/hello.kv") ms"
if [[ -n $codex ]]; then
	row "   codex app-server exec->initialize answered" "median $(kv codex_median_ms "$tmp/hello.kv") ms, p90 $(kv codex_p90_ms "$tmp/hello.kv") ms"
else
	row "   codex app-server" "not installed (CODEX=path adds it)"
fi
