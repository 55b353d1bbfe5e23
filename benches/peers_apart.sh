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
# Each engine's report goes to OUT_DIR/ENGINE.txt; then its load, get
# medians and memory lines are printed one engine after another, with
# each engine's figures over the first's. The engines run one after
# another, so the gets are not interleaved: quote the ratios with that.
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
mkdir -p "$out"
repo=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
cd "$repo"
exe=$(cargo bench "${features[@]}" --bench peers --no-run 2>&1 |
    sed -n 's/.*Executable benches\/peers.rs (\(.*\))$/\1/p')
[ -x "$exe" ] || {
    echo "peers_apart: the peers bench did not build" >&2
    exit 1
}

for e in "${engines[@]}"; do
    echo "== $e: its own process, ulimit -n 1024 -> $out/$e.txt" >&2
    (
        ulimit -n 1024
        BLOOMLSM_PEERS_ENGINES=$e exec "$exe" --bench
    ) >"$out/$e.txt"
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
