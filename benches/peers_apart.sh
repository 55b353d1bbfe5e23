#!/usr/bin/env bash
# The peers bench with each engine in its own process, under
# `ulimit -n 1024`: each engine keeps the whole file-descriptor limit and
# its own peak resident memory (docs/benchmarks.md, "10^8 keys beside
# RocksDB").
#
#   bash benches/peers_apart.sh OUT_DIR [ENGINE...]
#
# ENGINEs default to `bloomlsm rocksdb` (rocksdb builds with
# `--features rocksdb-peer`; source ../shared/rocksdb/env.sh first to link a
# prebuilt library). Every BLOOMLSM_PEERS_* variable but ENGINES passes
# through, e.g.
#   BLOOMLSM_PEERS_KEYS=100000000 BLOOMLSM_PEERS_IO=direct \
#   BLOOMLSM_PEERS_SETTINGS=defaults bash benches/peers_apart.sh /tmp/apart
#
# By default each engine runs once, one after another (load, settled gets,
# full compaction, gets again), its report in OUT_DIR/ENGINE.txt, so the
# gets are not interleaved. With BLOOMLSM_PEERS_APART_ROUNDS=R the gets are
# interleaved across processes: each engine loads into OUT_DIR/stores and
# keeps its settled tree (OUT_DIR/ENGINE-load.txt); then R rounds, the
# engines' order reversed every round, each round one process per engine
# timing one round of gets on its kept store with its own keys
# (BLOOMLSM_PEERS_GET_SEED=round); then each engine's full compaction in a
# process of its own (OUT_DIR/ENGINE-compact.txt); then R such rounds on
# the compacted stores. Each engine's median over the rounds is printed per
# state, over the first engine's. Run again on the same OUT_DIR, it times R
# more interleaved rounds on the stores as they were left (compacted).
set -euo pipefail

[ $# -ge 1 ] || {
    echo "usage: bash benches/peers_apart.sh OUT_DIR [ENGINE...]" >&2
    exit 2
}
out=$1
shift
engines=("$@")
[ ${#engines[@]} -gt 0 ] || engines=(bloomlsm rocksdb)
features=()
for e in "${engines[@]}"; do
    case $e in
    bloomlsm | fjall) ;;
    rocksdb) features=(--features rocksdb-peer) ;;
    *)
        echo "peers_apart: unknown engine $e (bloomlsm, fjall, rocksdb)" >&2
        exit 2
        ;;
    esac
done
rounds=${BLOOMLSM_PEERS_APART_ROUNDS:-0}
[[ $rounds =~ ^[0-9]+$ ]] || {
    echo "peers_apart: BLOOMLSM_PEERS_APART_ROUNDS must be a number of rounds, not '$rounds'" >&2
    exit 2
}
mkdir -p "$out"
out=$(cd "$out" && pwd)
repo=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
cd "$repo"
exe=$(cargo bench "${features[@]}" --bench peers --no-run 2>&1 |
    sed -n 's/.*Executable benches\/peers.rs (\(.*\))$/\1/p')
[ -x "$exe" ] || {
    echo "peers_apart: the peers bench did not build" >&2
    exit 1
}

# run ENGINE REPORT [VAR=VALUE...]: the bench for ENGINE alone in a process
# of its own, under `ulimit -n 1024`, its report to OUT_DIR/REPORT.txt.
run() {
    local e=$1 report=$2
    shift 2
    echo "== $e: its own process, ulimit -n 1024 -> $out/$report.txt" >&2
    (
        ulimit -n 1024
        exec env BLOOMLSM_PEERS_ENGINES="$e" "$@" "$exe" --bench
    ) >"$out/$report.txt"
}

# The first row of ENGINE's first gets table in each report named:
# "existing-ns missing-ns" (medians), a line per report.
first_row() {
    local e=$1
    shift
    for f in "$@"; do
        awk -v engine="$e" '
            /^(Settled tree|Kept tree|After a full manual compaction)/ { on = 1 }
            on && $0 ~ "^\\| " engine " \\| [0-9]" {
                split($0, f, "|"); split(f[3], a, " "); split(f[4], b, " ")
                print a[1], b[1]; exit
            }' "$f"
    done
}

median() { sort -g | awk '{ v[NR] = $1 } END { if (NR) print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'; }

if [ "$rounds" -eq 0 ]; then
    for e in "${engines[@]}"; do
        run "$e" "$e"
    done
    # One line per engine and state: the median ns/op of the tables' first
    # row (each process runs one engine), and its ratio to the first engine's.
    summary() {
        awk -v engine="$1" '
            /^Settled tree/ { state = "settled" }
            /^After a full manual compaction/ { state = "compacted" }
            state != "" && $0 ~ "^\\| " engine " \\| [0-9]" {
                split($0, f, "|"); split(f[3], a, " "); split(f[4], b, " ")
                print state, a[1], b[1]; state = ""
            }' "$out/$1.txt"
    }
    first=${engines[0]}
    for e in "${engines[@]}"; do
        echo
        echo "$e:"
        grep -E "^\| $e \| [a-z]+ \| [0-9.]+ \|" "$out/$e.txt" | sed 's/^/  load /' || true
        grep -E "^Memory|^After the loads" "$out/$e.txt" | sed 's/^/  /'
        paste <(summary "$e") <(summary "$first") | while read -r state ex mi _ ex0 mi0; do
            awk -v s="$state" -v ex="$ex" -v mi="$mi" -v ex0="$ex0" -v mi0="$mi0" -v f="$first" 'BEGIN {
                printf "  %s: existing get %.0f ns (%.2fx %s), missing get %.0f ns (%.2fx %s)\n",
                    s, ex, ex / ex0, f, mi, mi / mi0, f }'
        done
    done
    exit 0
fi

stores=$out/stores
# kept STATE: the engines' medians over the rounds of STATE, each over the
# first engine's.
kept() {
    local state=$1 first=${engines[0]} e mine base ex mi ex0 mi0
    for e in "${engines[@]}"; do
        mine=$(first_row "$e" "$out/$e-$state"-*.txt)
        base=$(first_row "$first" "$out/$first-$state"-*.txt)
        ex=$(cut -d' ' -f1 <<<"$mine" | median)
        mi=$(cut -d' ' -f2 <<<"$mine" | median)
        ex0=$(cut -d' ' -f1 <<<"$base" | median)
        mi0=$(cut -d' ' -f2 <<<"$base" | median)
        echo "  $e, $state, rounds: existing $(cut -d' ' -f1 <<<"$mine" | tr '\n' ' ')| missing $(cut -d' ' -f2 <<<"$mine" | tr '\n' ' ')"
        awk -v e="$e" -v s="$state" -v ex="$ex" -v mi="$mi" -v ex0="$ex0" -v mi0="$mi0" -v f="$first" 'BEGIN {
            printf "  %s, %s: existing get %.0f ns (%.2fx %s), missing get %.0f ns (%.2fx %s), medians\n",
                e, s, ex, ex / ex0, f, mi, mi / mi0, f }'
    done
}
# interleave STATE: ROUNDS rounds of one process per engine on the kept
# stores, the engines' order reversed every other round.
interleave() {
    local state=$1 r e order
    for r in $(seq 1 "$rounds"); do
        order=("${engines[@]}")
        if [ $((r % 2)) -eq 0 ]; then
            order=()
            for e in "${engines[@]}"; do order=("$e" "${order[@]}"); done
        fi
        for e in "${order[@]}"; do
            run "$e" "$e-$state-$r" BLOOMLSM_PEERS_DIR="$stores" BLOOMLSM_PEERS_COMPACT=0 \
                BLOOMLSM_PEERS_ROUNDS=1 BLOOMLSM_PEERS_GET_SEED="$r"
        done
    done
}
if [ -e "$stores" ]; then
    # The stores of an earlier run, as they are now (after its compaction,
    # if it got that far): more interleaved rounds, under a state named by
    # the time.
    state=kept-$(date -u +%H%M%S)
    interleave "$state"
    echo
    kept "$state"
    exit 0
fi
for e in "${engines[@]}"; do
    run "$e" "$e-load" BLOOMLSM_PEERS_DIR="$stores" BLOOMLSM_PEERS_COMPACT=0
done
interleave settled
for e in "${engines[@]}"; do
    run "$e" "$e-compact" BLOOMLSM_PEERS_DIR="$stores" BLOOMLSM_PEERS_COMPACT=1 \
        BLOOMLSM_PEERS_ROUNDS=1 BLOOMLSM_PEERS_GET_SEED=100
done
interleave compacted

for e in "${engines[@]}"; do
    echo
    echo "$e:"
    grep -E "^\| $e \| [a-z]+ \| [0-9.]+ \|" "$out/$e-load.txt" | sed 's/^/  load /' || true
    grep -E "^Memory|^After the loads" "$out/$e-load.txt" | sed 's/^/  loaded: /'
    grep -E "^After a full manual compaction|^Memory" "$out/$e-compact.txt" | sed 's/^/  compacted: /' || true
done
echo
kept settled
kept compacted
