# qv scan through the scan engine: filters agree with a brute-force count
# over the exported CSV, takes return the asked rows, every threading mode
# gives the same bytes, and bad filters are clear errors.
. "$(dirname "$0")/lib.sh"

run 0 gen lineitem --sf 0.002 --row-group-rows 2048 "$TMP/l.qvr"
run 0 export "$TMP/l.qvr" "$TMP/all.csv" --columns l_orderkey,l_quantity,l_shipmode

# l_quantity < 5 AND l_shipmode = 'AIR', counted by awk on the CSV.
expected=$(awk -F, 'NR > 1 && $2 + 0 < 5 && $3 == "AIR"' "$TMP/all.csv" | wc -l)
run 0 scan "$TMP/l.qvr" --format csv --columns l_orderkey,l_quantity,l_shipmode \
    --filter "l_quantity < 5 AND l_shipmode = 'AIR'"
got=$(($(wc -l < "$TMP/out") - 1))
check '[ "$got" -eq "$expected" ] && [ "$expected" -gt 0 ]' "filter returned $got rows, awk counts $expected"
cp "$TMP/out" "$TMP/filtered2.csv"

# Every threading mode and prefetch depth gives identical output.
for t in 0 1 3; do
    run 0 scan "$TMP/l.qvr" --format csv --columns l_orderkey,l_quantity,l_shipmode \
        --filter "l_quantity < 5 AND l_shipmode = 'AIR'" --threads $t --prefetch 2
    check 'cmp -s "$TMP/out" "$TMP/filtered2.csv"' "--threads $t changed the output"
done

# Pruning by statistics: keys beyond the last row group match nothing.
run 0 scan "$TMP/l.qvr" --format csv --columns l_orderkey --filter "l_orderkey > 100000000"
check '[ "$(wc -l < "$TMP/out")" -eq 1 ]' "an impossible filter returned rows"

# --take: rows by number, in any order, duplicates once.
run 0 scan "$TMP/l.qvr" --format csv --columns l_orderkey,l_quantity --take 7,0,3,7
check '[ "$(wc -l < "$TMP/out")" -eq 4 ]' "--take 7,0,3,7 did not give 3 rows"
for n in 0 3 7; do
    line=$(sed -n "$((n + 2))p" "$TMP/all.csv" | cut -d, -f1,2)
    check "grep -qxF '$line' '$TMP/out'" "--take lacks row $n ($line)"
done

# Errors name what and where.
run 1 scan "$TMP/l.qvr" --filter "l_quantity <"
err_has "position"
run 1 scan "$TMP/l.qvr" --filter "no_such_column = 1"
err_has "no_such_column"
run 1 scan "$TMP/l.qvr" --filter "l_shipmode > 5"
run 1 scan "$TMP/l.qvr" --take 999999999
run 2 scan "$TMP/l.qvr" --threads x
finish
