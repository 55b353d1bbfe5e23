#!/usr/bin/env bash
# Builds two commits of bloomlsm and alternates the same db_bench-style run
# on them, so that a change in load or get speed between them is seen the
# day it lands (docs/benchmarks.md, "Two commits, alternated").
#
#   bash benches/ab.sh BASE NEW [ROUNDS] [-- BENCH ARGS...]
#
# BASE and NEW are anything `git rev-parse` takes (NEW may be `.`: the
# working tree as it is). ROUNDS (default 3) pairs are run, the order
# swapped every round (A B, B A, ...), each a fresh store. BENCH ARGS
# default to
#   --benchmarks fillrandom,readrandom,readmissing --keys 1000000 --lookups 200000
# Prints, per benchmark, each build's micros/op in every round, their
# medians and NEW / BASE (below 1: NEW is faster).
set -euo pipefail

usage() {
    echo "usage: bash benches/ab.sh BASE NEW [ROUNDS] [-- BENCH ARGS...]" >&2
    exit 2
}
[ $# -ge 2 ] || usage
base=$1
new=$2
shift 2
rounds=3
if [ $# -gt 0 ] && [ "$1" != "--" ]; then
    rounds=$1
    shift
fi
[[ "$rounds" =~ ^[1-9][0-9]*$ ]] || usage
if [ $# -gt 0 ]; then
    [ "$1" = "--" ] || usage
    shift
fi
args=("$@")
if [ ${#args[@]} -eq 0 ]; then
    args=(--benchmarks fillrandom,readrandom,readmissing --keys 1000000 --lookups 200000)
fi

repo=$(git rev-parse --show-toplevel)
work=$(mktemp -d "${TMPDIR:-/tmp}/bloomlsm-ab.XXXXXX")
cleanup() {
    for t in "$work"/tree-*; do
        [ -d "$t" ] && git -C "$repo" worktree remove --force "$t" >/dev/null 2>&1
    done
    rm -rf "$work"
}
trap cleanup EXIT

build() { # name commit
    local name=$1 rev=$2 src
    # A target directory per build: one shared by two source trees can take
    # the second tree's crate for the first's, both having one name and
    # version.
    export CARGO_TARGET_DIR="$work/target-$name"
    if [ "$rev" = "." ]; then
        src=$repo
    else
        local sha
        sha=$(git -C "$repo" rev-parse --verify "$rev^{commit}") || {
            echo "ab.sh: $rev names no commit" >&2
            exit 2
        }
        src="$work/tree-$name"
        git -C "$repo" worktree add --detach "$src" "$sha" >/dev/null 2>&1
    fi
    echo "ab.sh: building $name ($rev)" >&2
    (cd "$src" && cargo build --release --quiet --bin bloomlsm)
    cp "$CARGO_TARGET_DIR/release/bloomlsm" "$work/bloomlsm-$name"
}
build A "$base"
build B "$new"

# The lines `NAME : X micros/op ...` of one run, as `NAME X`.
run() { # name round
    "$work/bloomlsm-$1" bench "${args[@]}" -q |
        awk -v who="$1" -v round="$2" '$2 == ":" && $4 == "micros/op" { print who, round, $1, $3 }'
}
: >"$work/results"
for ((r = 1; r <= rounds; r++)); do
    if ((r % 2)); then order="A B"; else order="B A"; fi
    for who in $order; do
        echo "ab.sh: round $r/$rounds, $who" >&2
        run "$who" "$r" >>"$work/results"
    done
done

echo "A = $base, B = $new; micros/op per round, medians, B / A; bloomlsm bench ${args[*]}"
awk '
    { v[$3, $1, ++n[$3, $1]] = $4; if (!($3 in seen)) { seen[$3] = 1; order[++k] = $3 } }
    function median(b, who,    i, j, t, m, a) {
        m = n[b, who]
        for (i = 1; i <= m; i++) a[i] = v[b, who, i]
        for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
        return m % 2 ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2
    }
    function list(b, who,    i, s) {
        s = ""
        for (i = 1; i <= n[b, who]; i++) s = s (i > 1 ? " " : "") v[b, who, i]
        return s
    }
    END {
        printf "%-14s %-30s %-30s %10s %10s %7s\n", "benchmark", "A rounds", "B rounds", "A median", "B median", "B / A"
        for (i = 1; i <= k; i++) {
            b = order[i]; a = median(b, "A"); bb = median(b, "B")
            printf "%-14s %-30s %-30s %10.3f %10.3f %7.3f\n", b, list(b, "A"), list(b, "B"), a, bb, (a > 0 ? bb / a : 0)
        }
    }' "$work/results"
