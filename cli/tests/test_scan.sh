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

# --take: rows by number, printed in the order given, repeats included;
# across row groups; with a filter on a column not printed; with --limit.
# expect_take ROWS [AWK-CONDITION [LIMIT]]: the expected CSV body, from all.csv.
expect_take() {
    for n in $(echo "$1" | tr , ' '); do
        sed -n "$((n + 2))p" "$TMP/all.csv"
    done | awk -F, "${2:-1} { print \$1 \",\" \$2 }" | head -n "${3:-1000000}" >"$TMP/want"
}
for rows in 7,0,3,7 5000,10,4097,10,2047,2048 0,3,7 3 9,8,7,6,5,4,3,2,1,0; do
    expect_take "$rows"
    run 0 scan "$TMP/l.qvr" --format csv --columns l_orderkey,l_quantity --take "$rows"
    tail -n +2 "$TMP/out" >"$TMP/got"
    check 'cmp -s "$TMP/got" "$TMP/want"' "--take $rows: got $(tr '\n' ' ' <"$TMP/got"), want $(tr '\n' ' ' <"$TMP/want")"
done
for t in 0 2; do
    expect_take 5000,10,4097,10,2047,2048,11 '$3 != "AIR"'
    run 0 scan "$TMP/l.qvr" --format csv --columns l_orderkey,l_quantity \
        --take 5000,10,4097,10,2047,2048,11 --filter "l_shipmode <> 'AIR'" --threads $t
    tail -n +2 "$TMP/out" >"$TMP/got"
    check 'cmp -s "$TMP/got" "$TMP/want"' "--take with --filter (threads $t): got $(tr '\n' ' ' <"$TMP/got")"
    expect_take 5000,10,4097,10,2047,2048,11 '$3 != "AIR"' 3
    run 0 scan "$TMP/l.qvr" --format csv --columns l_orderkey,l_quantity \
        --take 5000,10,4097,10,2047,2048,11 --filter "l_shipmode <> 'AIR'" --limit 3 --threads $t
    tail -n +2 "$TMP/out" >"$TMP/got"
    check 'cmp -s "$TMP/got" "$TMP/want"' "--take with --limit 3: got $(tr '\n' ' ' <"$TMP/got")"
done
run 0 scan "$TMP/l.qvr" --take 9,1 --limit 0 --format csv --columns l_orderkey
check '[ "$(wc -l < "$TMP/out")" -eq 1 ]' "--limit 0 with --take printed rows"
run 0 scan "$TMP/l.qvr" --take 9,1,9 --columns l_orderkey,l_comment
check '[ "$(grep -c "^ *[0-9]" "$TMP/out")" -eq 3 ] && grep -q "(3 rows)" "$TMP/out"' "table --take 9,1,9 did not print 3 rows"

# --mmap reads the same data as the default pread path (scan, take, export,
# inspect).
run 0 scan "$TMP/l.qvr" --format csv --columns l_orderkey,l_quantity,l_shipmode \
    --filter "l_quantity < 5 AND l_shipmode = 'AIR'" --mmap
check 'cmp -s "$TMP/out" "$TMP/filtered2.csv"' "--mmap changed the filtered scan"
run 0 scan "$TMP/l.qvr" --format csv --take 5000,10,4097 --columns l_orderkey,l_comment
cp "$TMP/out" "$TMP/take_pread.csv"
run 0 scan "$TMP/l.qvr" --format csv --take 5000,10,4097 --columns l_orderkey,l_comment --mmap
check 'cmp -s "$TMP/out" "$TMP/take_pread.csv"' "--mmap changed a take"
run 0 export "$TMP/l.qvr" "$TMP/all_mmap.csv" --columns l_orderkey,l_quantity,l_shipmode --mmap
check 'cmp -s "$TMP/all.csv" "$TMP/all_mmap.csv"' "export --mmap differs"
run 0 inspect "$TMP/l.qvr" --json
cp "$TMP/out" "$TMP/inspect_pread.json"
run 0 inspect "$TMP/l.qvr" --json --mmap
check 'cmp -s "$TMP/out" "$TMP/inspect_pread.json"' "inspect --mmap differs"

# Errors name what and where.
run 1 scan "$TMP/l.qvr" --filter "l_quantity <"
err_has "position"
run 1 scan "$TMP/l.qvr" --filter "no_such_column = 1"
err_has "no_such_column"
run 1 scan "$TMP/l.qvr" --filter "l_shipmode > 5"
run 1 scan "$TMP/l.qvr" --take 999999999
err_has "qv scan: invalid_argument: "
err_has "row 999999999 at position 0 is out of range"
run 1 scan "$TMP/l.qvr" --take 3,999999999,1
err_has "row 999999999 at position 1 is out of range"
run 1 scan "$TMP/l.qvr" --take 3,999999999,1 --limit 1
err_has "row 999999999 at position 1 is out of range"
run 1 scan "$TMP/l.qvr" --take 3,1 --filter "nope = 1"
err_has "no column 'nope'"
# Columns by the file layer's name rule: a kind, the name and the closest.
run 1 scan "$TMP/l.qvr" --columns l_orderkey,l_shipmod
err_has "qv scan: not_found: "
err_has "l_shipmod"
run 1 scan "$TMP/no_such_file.qvr"
err_has "qv scan: not_found: "
# Unquoted names match ignoring case when nothing matches exactly, as in
# the filter; a quoted one (with its comma) is exact.
run 0 scan "$TMP/l.qvr" --format csv --columns L_ORDERKEY --limit 1
out_has "l_orderkey"
run 1 scan "$TMP/l.qvr" --format csv --columns '"L_ORDERKEY"' --limit 1
err_has "not_found"
run 2 scan "$TMP/l.qvr" --take 3,-1
err_has "--take: -1 is negative"
run 2 scan "$TMP/l.qvr" --threads x
finish
