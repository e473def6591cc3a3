# bench/lib.sh: what the bench scripts share; sourced, never run.
#
# bench_setup NAME: refuses to run under CI (a manual measurement;
# OPENMAX_BENCH_FORCE=1 overrides), moves to the repository root, and makes
# the scratch folder $tmp (removed at exit unless KEEP=1). Then the helpers
# below are there: fail MSG, now, secs T0 T1, calc EXPR, median N..., kv
# KEY FILE.

bench_setup() {
	bench_name=$1
	if [[ -n ${CI:-} || -n ${GITHUB_ACTIONS:-} ]] && [[ -z ${OPENMAX_BENCH_FORCE:-} ]]; then
		echo "bench/$bench_name is a manual measurement script; not running under CI (OPENMAX_BENCH_FORCE=1 overrides)" >&2
		exit 0
	fi
	root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
	cd "$root"
	tmp=$(mktemp -d "${TMPDIR:-/tmp}/openmax-bench.XXXXXX")
	if [[ ${KEEP:-0} == 1 ]]; then
		echo "keeping $tmp"
	else
		trap 'rm -rf "$tmp"' EXIT
	fi
}

fail() { echo "bench/$bench_name: FAIL: $*" >&2; exit 1; }
now() { echo "${EPOCHREALTIME:-$(date +%s.%N)}"; }
# secs T0 T1 -> elapsed seconds; calc EXPR -> awk arithmetic
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b - a }'; }
calc() { awk "BEGIN { printf $1 }"; }
# median of the numbers given as arguments
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
# kv KEY FILE -> the value of the first KEY=value line
kv() { grep -m1 "^$1=" "$2" | cut -d= -f2-; }
