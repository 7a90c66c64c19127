# qv gen: deterministic output, expected row counts and column types, row
# group sizes, usage errors, and the memory limit.
. "$(dirname "$0")/lib.sh"

run 0 gen lineitem --sf 0.001 "$TMP/a.qvr"
out_has "SF 0.001"
run 0 gen lineitem --sf=0.001 "$TMP/b.qvr"
check 'cmp -s "$TMP/a.qvr" "$TMP/b.qvr"' "two runs at the same SF differ"
run 0 gen lineitem --sf 0.002 "$TMP/c.qvr"
check '! cmp -s "$TMP/a.qvr" "$TMP/c.qvr"' "different SFs gave the same file"

# Rows: 1,500 orders of 1..7 lines; types of every column.
run 0 inspect --json "$TMP/a.qvr"
JSON=$TMP/out
rows=$(sed -n 's/^  "num_rows": \([0-9]*\),$/\1/p' "$JSON")
check '[ -n "$rows" ] && [ "$rows" -ge 1500 ] && [ "$rows" -le 10500 ]' "row count '$rows' outside 1500..10500"
check '[ "$rows" -ge 5000 ] && [ "$rows" -le 7000 ]' "row count '$rows' far from the expected ~6000"
for spec in l_orderkey:int64 l_partkey:int64 l_suppkey:int64 l_linenumber:int32 \
            l_quantity:decimal128 l_extendedprice:decimal128 l_discount:decimal128 l_tax:decimal128 \
            l_returnflag:utf8 l_linestatus:utf8 l_shipdate:date32 l_commitdate:date32 \
            l_receiptdate:date32 l_shipinstruct:utf8 l_shipmode:utf8 l_comment:utf8; do
    name=${spec%%:*}
    type=${spec#*:}
    check "grep -A2 '\"name\": \"$name\"' '$JSON' | grep -q '\"type\": \"$type\"'" "column $name is not $type"
done
check "grep -q '\"type_text\": \"decimal128(15, 2)\"' '$JSON'" "decimals are not decimal128(15, 2)"
check "grep -q '\"tpch.scale_factor\": \"0.001\"' '$JSON'" "scale factor metadata missing"
# Every segment names its encoding tree.
check "grep -q '\"encoding\": \"' '$JSON'" "no encodings in the JSON"
if command -v python3 >/dev/null 2>&1; then
    check "python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d[\"summary\"][\"rows\"] == $rows' '$JSON'" "inspect --json is not valid JSON"
fi

# Row groups are cut exactly where asked.
run 0 gen lineitem --sf 0.001 --row-group-rows 1000 "$TMP/rg.qvr"
run 0 inspect --json --no-encodings "$TMP/rg.qvr"
check "grep -q '\"rows\": 1000,' '$TMP/out'" "row groups are not 1000 rows"
groups=$(sed -n 's/^  "num_row_groups": \([0-9]*\),$/\1/p' "$TMP/out")
check '[ "$groups" -eq $(( (rows + 999) / 1000 )) ]' "expected $(( (rows + 999) / 1000 )) row groups, got $groups"
run 0 scan "$TMP/rg.qvr" --format csv --columns l_orderkey,l_linenumber
check '[ $(wc -l <"$TMP/out") -eq $((rows + 1)) ]' "scan did not return every row"
run 0 gen lineitem --sf 0.001 --compact "$TMP/compact.qvr"
# Files for point lookups: the same rows, no frame encoding in any tree.
run 0 gen lineitem --sf 0.001 --random-access "$TMP/ra.qvr"
run 0 inspect "$TMP/ra.qvr"
check "! grep -Eq ' (ans|zstd|lz4|zstd_dict)[( ]' '$TMP/out'" "a --random-access file holds frames"
run 0 inspect "$TMP/a.qvr"
check "grep -Eq ' (ans|zstd|lz4|zstd_dict)[( ]' '$TMP/out'" "the default file holds no frames: the check above tests nothing"
run 0 scan "$TMP/ra.qvr" --format csv
cp "$TMP/out" "$TMP/ra.csv"
run 0 scan "$TMP/a.qvr" --format csv
check "cmp -s '$TMP/out' '$TMP/ra.csv'" "a --random-access file scans to other rows"
run 2 gen lineitem --sf 0.001 --compact --random-access "$TMP/x.qvr"
err_has "--compact and --random-access exclude each other"

# The table scan shows the first rows of TPC-H's first order key.
run 0 scan "$TMP/a.qvr" --limit 3 --columns l_orderkey,l_linenumber,l_shipmode
out_has "(3 rows)"
out_has "l_orderkey | l_linenumber | l_shipmode"

# Usage errors: exit 2, nothing written.
run 2 gen
run 2 gen lineitem
run 2 gen orders "$TMP/x.qvr"
err_has "unknown table 'orders'"
run 2 gen lineitem --sf 0 "$TMP/x.qvr"
err_has "--sf"
run 2 gen lineitem --sf abc "$TMP/x.qvr"
run 2 gen lineitem --row-group-rows -5 "$TMP/x.qvr"
run 2 gen lineitem --bogus "$TMP/x.qvr"
err_has "unknown option '--bogus'"
check '[ ! -e "$TMP/x.qvr" ]' "a failed gen left a file"

# A memory limit too small: ENOMEM with the pool's message, exit 1, no file.
run 1 --memory-limit 256K gen lineitem --sf 0.01 "$TMP/m.qvr"
err_has "qv gen:"
check '[ ! -e "$TMP/m.qvr" ]' "gen under a too-small limit left a file"
check '[ -z "$(ls "$TMP" | grep tmp)" ]' "temporary files left behind: $(ls "$TMP")"
run 1 gen lineitem --sf 0.01 --memory-limit 256K "$TMP/m.qvr"
run 2 --memory-limit lots gen lineitem "$TMP/m.qvr"
# ... and a sufficient one works.
run 0 --memory-limit 64M gen lineitem --sf 0.001 "$TMP/m.qvr"
check 'cmp -s "$TMP/a.qvr" "$TMP/m.qvr"' "the memory limit changed the output"

# Writing into a directory that does not exist is a runtime error.
run 1 gen lineitem --sf 0.001 "$TMP/no/such/dir/x.qvr"
err_has "no/such/dir"

finish
