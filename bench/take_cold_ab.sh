#!/usr/bin/env bash
# A/B of a cold take's load-independent costs (issue 14, item 5): two
# builds of bench/bench_take_cold.c (A = baseline, B = change) on one .qvr file.
#
#   bench/take_cold_ab.sh BIN_A BIN_B FILE.qvr [REPEATS]
#
# Each binary is BUILD/bench/bench_take_cold of a release build of the
# revision (the benchmarks are built by default; copy it aside per revision).
#
# Per build: the system calls of one cold take (fresh open + take of 100
# sorted random rows, fixed seed + close) counted by strace between the
# program's markers; the minor page faults of that take (getrusage, the
# first cold take after one take on another open of the file) and of the
# whole process (/usr/bin/time -v, minus a run that only opens); then the
# wall clock of REPEATS cold takes (min, median) and of REPEATS warm takes,
# the builds alternating.
set -euo pipefail
a="$1"; b="$2"; file="$3"; reps="${4:-20}"
count() {
    local bin="$1" mode="$2" tr
    tr="$(mktemp)"
    strace -f -o "$tr" "$bin" "$file" "$mode" 1 >/dev/null 2>&1
    awk '/QV_MEASURE_BEGIN/{on=1;next} /QV_MEASURE_END/{on=0}
         on{ s=$2; if ($2 ~ /^[0-9]+$/) s=$3; sub(/\(.*/,"",s); if (s!="getrusage") c[s]++ }
         END{for(k in c) print k "=" c[k]}' "$tr" | sort | tr '\n' ' '
    rm -f "$tr"
}
procfaults() {
    /usr/bin/time -v "$1" "$file" "$2" 1 2>&1 >/dev/null | awk -F: '/Minor/{gsub(/ /,"",$2); print $2}'
}
for tag in A B; do
    bin="$a"; [ "$tag" = B ] && bin="$b"
    echo "$tag ($bin)"
    echo "  syscalls, one cold take: $(count "$bin" cold)"
    echo "  syscalls, one warm take: $(count "$bin" warm)"
    echo "  $("$bin" "$file" cold 1 | sed 's/; cpu.*//')"
    p1="$(procfaults "$bin" cold)"; p0="$(procfaults "$bin" none)"
    echo "  whole process minor faults (time -v): cold take $p1, open only $p0, difference $((p1 - p0))"
done
echo "wall clock, $reps repeats per run, 3 runs alternating:"
for r in 1 2 3; do
    for tag in A B; do
        bin="$a"; [ "$tag" = B ] && bin="$b"
        echo "  $tag $("$bin" "$file" cold "$reps" | sed 's/; minor.*//')"
        echo "  $tag $("$bin" "$file" warm "$reps" | sed 's/; minor.*//')"
    done
done
