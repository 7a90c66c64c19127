# qv import / export: every inferred type, quoting, nulls, unicode; the
# round trip is stable; --schema; and bad CSV gives errors with lines.
. "$(dirname "$0")/lib.sh"

run 0 import "$DATA/types.csv" "$TMP/t.qvr"
for spec in "id: int64" "name: utf8" "price: float64" "flag: bool" "day: date32" \
            "ts: timestamp[us]" "tsz: timestamp[us, UTC]" "note: utf8" "empty: utf8"; do
    out_has "$spec"
done
run 0 export "$TMP/t.qvr"
check 'cmp -s "$TMP/out" "$DATA/types.expected.csv"' "export differs from the expected CSV: $(diff "$TMP/out" "$DATA/types.expected.csv")"
# To a file, then back again: the second round trip changes nothing.
run 0 export "$TMP/t.qvr" "$TMP/t.csv"
check 'cmp -s "$TMP/t.csv" "$DATA/types.expected.csv"' "export to a file differs"
run 0 import "$TMP/t.csv" "$TMP/t2.qvr"
run 0 export "$TMP/t2.qvr" -
check 'cmp -s "$TMP/out" "$DATA/types.expected.csv"' "second round trip differs"
# Projection and order.
run 0 export "$TMP/t.qvr" --columns note,id
check '[ "$(head -1 "$TMP/out")" = "note,id" ]' "--columns did not project"
run 1 export "$TMP/t.qvr" --columns nope
err_has "no column 'nope'"
# Standard input, another delimiter, a given schema.
printf 'a;b;c\n1;2.50;x\n-3;;"y;z"\n' >"$TMP/semi.csv"
"$QV" import - "$TMP/s.qvr" --delimiter ';' --schema 'b:decimal(10,2),a:int16' \
    <"$TMP/semi.csv" >"$TMP/out" 2>"$TMP/err" || fail "import from stdin: $(cat "$TMP/err")"
out_has "a: int16"
out_has "b: decimal128(10, 2)"
out_has "c: utf8"
run 0 export "$TMP/s.qvr" --delimiter tab
check "[ \"\$(sed -n 2p '$TMP/out')\" = \"\$(printf '1\t2.50\tx')\" ]" "tab export: $(cat "$TMP/out")"
check "[ \"\$(sed -n 3p '$TMP/out')\" = \"\$(printf -- '-3\t\ty;z')\" ]" "tab export row 2: $(cat "$TMP/out")"
run 0 scan "$TMP/s.qvr" --format csv
out_has '-3,,y;z'
# A single column keeps null rows (blank lines) and empty strings apart.
printf 'only\na\n\n""\nb\n' >"$TMP/one.csv"
run 0 import "$TMP/one.csv" "$TMP/one.qvr"
run 0 export "$TMP/one.qvr"
check 'printf "only\na\n\n\"\"\nb\n" | cmp -s - "$TMP/out"' "single column nulls: $(cat "$TMP/out")"

# Integers beyond int64 are inferred losslessly, never as float64: uint64
# when none is negative, decimal(38, 0) up to 38 digits, text beyond; and
# they come back digit for digit.
printf 'u,d,t,i,f\n18446744073709551615,-9223372036854775809,123456789012345678901234567890123456789012,1,1.5\n9223372036854775808,99999999999999999999999999999999999999,-1,-9223372036854775808,2\n' >"$TMP/big.csv"
run 0 import "$TMP/big.csv" "$TMP/big.qvr"
out_has "u: uint64"
out_has "d: decimal128(38, 0)"
out_has "t: utf8"
out_has "i: int64"
out_has "f: float64"
run 0 export "$TMP/big.qvr"
check 'cmp -s "$TMP/out" "$TMP/big.csv"' "big integers changed: $(cat "$TMP/out")"
# Dates and timestamps: the library's grammar both ways, so years beyond
# 9999 and before 0 come back as written, and an impossible day is an error
# that says why.
printf 'd,t\n+10000-01-01,-0001-12-31T23:59:59.5\n-0001-02-28,+10000-01-01T00:00:00\n1970-01-01,1969-12-31T23:59:59.999999\n' >"$TMP/far.csv"
run 0 import "$TMP/far.csv" "$TMP/far.qvr" --schema 'd:date32,t:timestamp[us]'
run 0 export "$TMP/far.qvr"
printf 'd,t\n+10000-01-01,-0001-12-31T23:59:59.500000\n-0001-02-28,+10000-01-01T00:00:00\n1970-01-01,1969-12-31T23:59:59.999999\n' >"$TMP/far.want"
check 'cmp -s "$TMP/out" "$TMP/far.want"' "far dates changed: $(cat "$TMP/out")"
printf 'd\n2023-02-29\n' >"$TMP/feb.csv"
run 1 import "$TMP/feb.csv" "$TMP/bad.qvr" --schema 'd:date32'
err_has "qv import: invalid_argument: "
err_has "line 2, column 1 ('d'): date '2023-02-29': February 2023 has no day 29"
# A value beyond the inferred type after the sample is an error naming it.
{ echo n; i=0; while [ $i -lt 20 ]; do echo $i; i=$((i + 1)); done; echo 9223372036854775808; } >"$TMP/late_big.csv"
run 1 import "$TMP/late_big.csv" "$TMP/bad.qvr" --sample-rows 10
err_has "line 22, column 1 ('n'): '9223372036854775808' is out of range"
{ echo n; echo 18446744073709551615; i=0; while [ $i -lt 20 ]; do echo $i; i=$((i + 1)); done; echo -1; } >"$TMP/late_neg.csv"
run 1 import "$TMP/late_neg.csv" "$TMP/bad.qvr" --sample-rows 10
err_has "line 23, column 1 ('n'): '-1' is out of range"

# Duplicate names: --schema may not give a column twice nor name a header
# name that several columns share; scan and filter refuse such names too.
run 2 import "$TMP/big.csv" "$TMP/bad.qvr" --schema 'u:uint64,u:decimal(20,0)'
err_has "--schema: column 'u' is given twice"
printf 'a,b,a\n1,2,3\n' >"$TMP/dup.csv"
run 1 import "$TMP/dup.csv" "$TMP/bad.qvr" --schema 'a:int8'
err_has "ambiguous column name 'a': columns 1 and 3"
# --schema names by the same rule as --columns and --filter: exact, else
# ignoring case.
printf 'ID,Name\n1,x\n' >"$TMP/case.csv"
run 0 import "$TMP/case.csv" "$TMP/case.qvr" --schema 'id:int32'
out_has "ID: int32"
run 0 import "$TMP/dup.csv" "$TMP/dup.qvr" --schema 'b:int8'
run 1 scan "$TMP/dup.qvr" --columns a
err_has "ambiguous column name 'a': fields 0 and 2"
run 1 scan "$TMP/dup.qvr" --filter 'a = 1'
err_has "ambiguous column name 'a': fields 0 and 2"
run 1 export "$TMP/dup.qvr" --columns b,a
err_has "ambiguous column name 'a'"
run 0 scan "$TMP/dup.qvr" --columns b --filter 'b = 2' --format csv
check '[ "$(cat "$TMP/out")" = "$(printf "b\n2")" ]' "scan of an unambiguous column: $(cat "$TMP/out")"
run 0 export "$TMP/dup.qvr"
check '[ "$(cat "$TMP/out")" = "$(printf "a,b,a\n1,2,3")" ]' "export of duplicate names: $(cat "$TMP/out")"

# Errors name the line and the column; exit 1; no output file.
printf 'a,b,c\n1,2,3\n4,5\n' >"$TMP/ragged.csv"
run 1 import "$TMP/ragged.csv" "$TMP/bad.qvr"
err_has "line 3: 2 fields, but the header has 3 columns"
printf 'a,b\n1,2\n3,x\n' >"$TMP/badint.csv"
run 1 import "$TMP/badint.csv" "$TMP/bad.qvr" --schema 'b:int32'
err_has "line 3, column 2 ('b'): 'x' is not a valid int32"
# A bad value after the inference sample is caught too.
{ echo n; i=0; while [ $i -lt 50 ]; do echo $i; i=$((i + 1)); done; echo oops; } >"$TMP/late.csv"
run 1 import "$TMP/late.csv" "$TMP/bad.qvr" --sample-rows 10
err_has "line 52, column 1 ('n'): 'oops' is not a valid int64"
printf 'a\n"never closed\n' >"$TMP/quote.csv"
run 1 import "$TMP/quote.csv" "$TMP/bad.qvr"
err_has "never closed"
printf 'a,b\n"x"y,1\n' >"$TMP/after.csv"
run 1 import "$TMP/after.csv" "$TMP/bad.qvr"
err_has "line 2, field 1"
printf 'a\n\377\n' >"$TMP/utf8.csv"
run 1 import "$TMP/utf8.csv" "$TMP/bad.qvr"
err_has "not valid UTF-8"
printf 'a,b\n1,99999\n' >"$TMP/prec.csv"
run 1 import "$TMP/prec.csv" "$TMP/bad.qvr" --schema 'b:decimal(4,2)'
err_has "line 2, column 2 ('b')"
: >"$TMP/empty.csv"
run 1 import "$TMP/empty.csv" "$TMP/bad.qvr"
err_has "expected a header"
run 1 import "$TMP/nonexistent.csv" "$TMP/bad.qvr"
err_has "nonexistent.csv"
run 1 import "$TMP/badint.csv" "$TMP/bad.qvr" --schema 'zz:int32'
err_has "no column 'zz'"
run 2 import "$TMP/badint.csv" "$TMP/bad.qvr" --schema 'b:int33'
err_has "unknown type 'int33'"
run 2 import "$TMP/badint.csv" "$TMP/bad.qvr" --schema 'b'
run 2 import "$TMP/badint.csv" "$TMP/bad.qvr" --delimiter ab
check '[ ! -e "$TMP/bad.qvr" ]' "a failed import left a file"
check '[ -z "$(ls "$TMP" | grep tmp)" ]' "temporary files left behind: $(ls "$TMP")"

finish
