#!/usr/bin/env bash
# bench/scan.sh: manual measurement of `openmax cassette scan` (issue 24),
# never run in CI (it refuses when CI is set; OPENMAX_BENCH_FORCE=1 overrides).
#
#   1. the whole repository, as a pre-commit hook would scan it (every
#      *.yaml, *.yml, *.httprr, *.txtar and *.golden outside .git): wall
#      time, MB/s, and the same files through `grep -E` of one key pattern
#      (the floor any scanner has to read them), each the median of RUNS runs;
#   2. the same recordings copied COPIES times (a library COPIES times
#      bigger), for the throughput past start-up;
#   3. one 100 MB cassette (read as text, streaming): time and peak RSS
#      (/usr/bin/time -v, when installed).
#
# Knobs (environment): RUNS=5 COPIES=20 KEEP=0.
#
# Usage: bench/scan.sh            (from anywhere in the repository)
set -euo pipefail

RUNS=${RUNS:-5}
COPIES=${COPIES:-20}

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
bench_setup scan.sh

export GOPROXY=off GOTOOLCHAIN=local GOFLAGS=${GOFLAGS:-}
echo "== building into $tmp"
go build -o "$tmp/openmax" ./cmd/openmax ||
	fail "go build (GOPROXY=off: run 'go mod download' once if modules are missing)"
om=$tmp/openmax
echo "== machine: $(uname -srm), nproc $(nproc), $(go version)"

find . -path ./.git -prune -o -type f \( -name '*.yaml' -o -name '*.yml' -o -name '*.httprr' -o -name '*.txtar' -o -name '*.golden' \) -print | sort >"$tmp/files"
nfiles=$(wc -l <"$tmp/files")
bytes=$(xargs cat <"$tmp/files" | wc -c)
xargs cat <"$tmp/files" >/dev/null # warm the page cache

run_scan() { # ARGS... -> seconds; fails unless exit 0
	local t0 t1 rc=0
	t0=$(now)
	"$om" cassette scan "$@" >"$tmp/out" 2>"$tmp/err" || rc=$?
	t1=$(now)
	[[ $rc == 0 ]] || fail "scan exited $rc: $(head -3 "$tmp/out") $(tail -1 "$tmp/err")"
	secs "$t0" "$t1"
}
run_grep() { # DIR -> seconds
	local t0 t1
	t0=$(now)
	grep -rE --include='*.yaml' --include='*.yml' --include='*.httprr' --include='*.txtar' --include='*.golden' \
		--exclude-dir=.git -c 'sk-[A-Za-z0-9_-]{20,}|AKIA[A-Z0-9]{16}' "$1" >/dev/null || true
	t1=$(now)
	secs "$t0" "$t1"
}

echo "== 1. the repository: $nfiles files, $(calc "\"%.1f\", $bytes/1e6") MB (median of $RUNS runs)"
ours=() greps=()
for ((r = 1; r <= RUNS; r++)); do
	ours+=("$(run_scan .)")
	greps+=("$(run_grep .)")
done
o=$(median "${ours[@]}")
g=$(median "${greps[@]}")
printf '   openmax cassette scan .   %6.3f s  %6.1f MB/s   (%s)\n' "$o" "$(calc "\"%f\", $bytes/1e6/$o")" "$(tail -1 "$tmp/err")"
printf '   grep -rE (one pattern)    %6.3f s  %6.1f MB/s\n' "$g" "$(calc "\"%f\", $bytes/1e6/$g")"

echo "== 2. the recordings copied $COPIES times"
lib=$tmp/lib
for ((c = 1; c <= COPIES; c++)); do
	while read -r f; do
		mkdir -p "$lib/$c/$(dirname "$f")"
		cp "$f" "$lib/$c/$f"
	done <"$tmp/files"
done
lbytes=$(find "$lib" -type f -print0 | xargs -0 cat | wc -c)
ours=() greps=()
for ((r = 1; r <= RUNS; r++)); do
	ours+=("$(run_scan "$lib")")
	greps+=("$(run_grep "$lib")")
done
o=$(median "${ours[@]}")
g=$(median "${greps[@]}")
printf '   openmax cassette scan     %6.3f s  %6.1f MB/s  over %.1f MB\n' "$o" "$(calc "\"%f\", $lbytes/1e6/$o")" "$(calc "\"%f\", $lbytes/1e6")"
printf '   grep -rE (one pattern)    %6.3f s  %6.1f MB/s\n' "$g" "$(calc "\"%f\", $lbytes/1e6/$g")"

echo "== 3. one 100 MB cassette"
big=$tmp/big.yaml
{
	printf 'version: 1\ninteractions:\n  - request:\n      body: '"'"
	head -c 100000000 /dev/zero | tr '\0' 'x'
	printf "'\n      method: POST\n"
} >"$big"
if [[ -x /usr/bin/time ]]; then
	/usr/bin/time -v "$om" cassette scan "$big" >/dev/null 2>"$tmp/time" || true
	printf '   %s s, peak RSS %s KiB\n' "$(grep -m1 'Elapsed' "$tmp/time" | awk '{print $NF}')" "$(grep -m1 'Maximum resident' "$tmp/time" | awk '{print $NF}')"
else
	t0=$(now)
	"$om" cassette scan "$big" >/dev/null 2>&1 || true
	t1=$(now)
	printf '   %s s (no /usr/bin/time for the peak RSS)\n' "$(secs "$t0" "$t1")"
fi
