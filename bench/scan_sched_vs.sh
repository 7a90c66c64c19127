#!/usr/bin/env bash
# bench/scan_sched_vs.sh [BASE_REF] [REPS] [FILE]
#
# The scan scheduler against a base revision (default: main), on one
# machine, in one script, runs alternating so that load from elsewhere hits
# both alike. The base is built from `git archive BASE_REF` in /tmp with this
# tree's bench/bench_scan.c (which uses the public API only), so both run
# exactly the same measures:
#  1. speed: `bench_scan --sched FILE REPS` (1 against 2 workers: full scan,
#     single-column projections, l_partkey + l_comment, Q6; min and median
#     wall ms), twice per build,
#     alternating;
#  2. memory: `bench_scan --child flat FILE W P 1 DIR` (a fresh process per
#     run: peak RSS (VmHWM), peak anonymous RSS, pool peak, most batches
#     queued) for W = 1, 2, 4, 8 workers and prefetch P = 1 and P = W,
#     REPS runs per build alternating; medians side by side.
# SCHED_VS_PARTS=speed or mem runs one half.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$here")"
base="${1:-main}"
reps="${2:-5}"
file="${3:-$root/data/bench/lineitem-tpch-sf1.qvr}"
[ -f "$file" ] || { echo "no data file $file (bench/run scan writes it)" >&2; exit 2; }
tmp="/tmp/qv-sched-base-$(echo "$base" | tr '/' '_')"
# Kept between runs: git archive restores mtimes, so an unchanged base does not rebuild.
mkdir -p "$tmp"
git -C "$root" archive "$base" | tar -x -C "$tmp"
cp "$root/bench/bench_scan.c" "$tmp/bench/bench_scan.c"
for t in "$tmp" "$root"; do
    cmake -S "$t" -B "$t/build/release" -DCMAKE_BUILD_TYPE=Release -DQV_BUILD_TESTS=OFF >/dev/null
    cmake --build "$t/build/release" -j2 --target bench_scan >/dev/null
done
A="$tmp/build/release/bench/bench_scan"
B="$root/build/release/bench/bench_scan"
out="$(mktemp -d /tmp/qv-sched-vs.XXXXXX)"
echo "base: $base ($(git -C "$root" rev-parse --short "$base")), this tree: $(git -C "$root" rev-parse --short HEAD)$(git -C "$root" diff --quiet || echo +changes)"
echo "file: $file; CPUs in this process's affinity: $(python3 -c 'import os; print(len(os.sched_getaffinity(0)))')"

parts="${SCHED_VS_PARTS:-all}"
if [ "$parts" != mem ]; then
echo
echo "== speed (ms; min / median of $reps, 2 rounds per build alternating) =="
for round in 1 2; do
    "$A" --sched "$file" "$reps" > "$out/speed-base-$round.txt"
    "$B" --sched "$file" "$reps" > "$out/speed-new-$round.txt"
done
printf "%-16s %-3s | %-26s | %-26s\n" measure w "base min/med (r1; r2)" "new min/med (r1; r2)"
pick() { awk -v m="$1" -v w="$2" '$1=="SCHED" && $2==m && $3==w {
    a=$0; sub(/.*min_ms= */,"",a); split(a,x," "); b=$0; sub(/.*med_ms= */,"",b); split(b,y," ");
    print x[1] "/" y[1]}' "$3"; }
for m in full col_l_comment col_l_partkey int_str q6 dec_filter dec_filter_or; do
    for w in w1 w2; do
        printf "%-16s %-3s | %-26s | %-26s\n" "$m" "$w" \
            "$(pick "$m" "$w" "$out/speed-base-1.txt"); $(pick "$m" "$w" "$out/speed-base-2.txt")" \
            "$(pick "$m" "$w" "$out/speed-new-1.txt"); $(pick "$m" "$w" "$out/speed-new-2.txt")"
    done
    for side in base new; do
        for r in 1 2; do
            grep "SCHED $m " "$out/speed-$side-$r.txt" | grep speedup | sed "s/^SCHED/  $side r$r:/"
        done
    done
done

fi

if [ "$parts" != speed ]; then
echo
echo "== memory: flat read of lineitem, fresh process per run (medians of $reps; MB) =="
printf "%-7s %-8s | %-34s | %-34s\n" workers prefetch "base: HWM anon pool q MB/s" "new: HWM anon pool q MB/s"
med() { sort -g | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }
for w in 1 2 4 8; do
    for p in 1 "$w"; do
        [ "$w" = 1 ] && [ "$p" = "$w" ] && [ -s "$out/mem-base-1-1.txt" ] && continue
        : > "$out/mem-base-$w-$p.txt"
        : > "$out/mem-new-$w-$p.txt"
        for r in $(seq "$reps"); do
            "$A" --child flat "$file" "$w" "$p" 1 "$out" | grep RESULT >> "$out/mem-base-$w-$p.txt"
            "$B" --child flat "$file" "$w" "$p" 1 "$out" | grep RESULT >> "$out/mem-new-$w-$p.txt"
        done
        line=""
        for side in base new; do
            f="$out/mem-$side-$w-$p.txt"
            get() { sed -n "s/.* $1=\([0-9.]*\).*/\1/p" "$f"; }
            hwm=$(get hwm | med | awk '{print $1/1e6}'); anon=$(get anon | med | awk '{print $1/1e6}')
            pool=$(get pool_peak | med | awk '{print $1/1e6}')
            q=$(get maxq | sort -n | tail -1)
            mbs=$(paste <(get bytes) <(sed -n 's/RESULT secs=\([0-9.]*\).*/\1/p' "$f") | awk '{print $1/$2/1e6}' | med)
            line="$line$(printf "%6.1f %6.1f %6.1f %2s %6.0f" "$hwm" "$anon" "$pool" "$q" "$mbs") | "
        done
        printf "%-7s %-8s | %s\n" "$w" "$p" "$line"
    done
done
fi
echo "(raw results in $out)"
