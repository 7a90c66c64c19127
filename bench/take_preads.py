"""The pread64 calls of one cold take, by column: which column (or the
footer) each read falls in, their count and bytes (issue 14, item 5).

    qv inspect FILE.qvr --json --no-encodings > insp.json
    strace -f -o trace.txt BUILD/bench/bench_take_cold FILE.qvr cold 1
    python3 bench/take_preads.py insp.json trace.txt

Only the calls between bench_take_cold's QV_MEASURE_BEGIN / _END markers count."""
import json, sys, re, collections
d = json.load(open(sys.argv[1])); tr = sys.argv[2]
segs = []
for rg in d['row_groups']:
    for ch in rg['chunks']:
        for s in ch['segments']:
            segs.append((s['offset'], s['offset'] + s['length'], ch['path']))
segs.sort()
import bisect
starts = [s[0] for s in segs]
cnt = collections.Counter(); by = collections.Counter()
on = False
for line in open(tr):
    if 'QV_MEASURE_BEGIN' in line: on = True; continue
    if 'QV_MEASURE_END' in line: on = False
    if not on or 'pread64' not in line: continue
    m = re.search(r'pread64\(\d+, .*, (\d+), (\d+)\) = (\d+)', line)
    if not m: continue
    ln, off = int(m.group(1)), int(m.group(2))
    i = bisect.bisect_right(starts, off) - 1
    name = segs[i][2] if i >= 0 and off < segs[i][1] else 'footer/other'
    cnt[name] += 1; by[name] += ln
tot = sum(by.values())
for k, v in sorted(by.items(), key=lambda x: -x[1]):
    print(f"{k:18s} reads {cnt[k]:5d} bytes {v:10d}  {v/cnt[k]:8.0f}/read")
print(f"total reads {sum(cnt.values())} bytes {tot}")
