# Help on every command, usage errors (exit 2), and corrupt, truncated or
# foreign files: inspect, scan and export exit 1 with a message and never
# crash.
. "$(dirname "$0")/lib.sh"

run 0 --help
out_has "usage: qv"
run 0 --version
out_has "qv (quiver)"
run 2
run 2 frobnicate
err_has "unknown command 'frobnicate'"
run 2 --bogus gen
for cmd in gen import export inspect scan demo; do
    run 0 "$cmd" --help
    out_has "usage: qv $cmd"
    out_has "--memory-limit"
    run 0 "$cmd" -h
    run 2 "$cmd" --no-such-option
    err_has "unknown option '--no-such-option'"
    err_has "Try 'qv $cmd --help'"
    run 2 "$cmd" -x
done
run 2 scan
run 2 scan a.qvr b.qvr
run 2 scan a.qvr --limit
err_has "needs a value"
run 2 scan a.qvr --limit -1
err_has "qv scan: --limit: -1 is negative"
# Errors before a command is known say "qv: ", not "qv : ".
run 2 frobnicate
err_has "qv: unknown command 'frobnicate'"
run 2 --memory-limit abc scan a.qvr
err_has "qv: --memory-limit: 'abc' is not a byte count"
check '! grep -q "qv :" "$TMP/err"' "stray space after qv"
# Numeric options: negative, non-numeric, blank-padded, hex, exponent and
# too large values are usage errors naming the option.
for opt in limit threads prefetch max-width take; do
    for v in -1 abc " 5" "5 " 0x10 1e3 99999999999999999999 ""; do
        run 2 scan a.qvr --$opt "$v"
        err_has "qv scan: --$opt: "
    done
done
for v in -1 abc 0x10 1e3 " 5" nan inf 5Q 18446744073709551616; do
    run 2 scan a.qvr --memory-limit "$v"
    err_has "--memory-limit: "
done
run 2 gen lineitem "$TMP/x.qvr" --row-group-rows -5
err_has "--row-group-rows: -5 is negative"
run 2 gen lineitem "$TMP/x.qvr" --sf 0x1p-3
err_has "--sf: '0x1p-3' is not a number"
run 2 gen lineitem "$TMP/x.qvr" --sf " 1"
run 2 import in.csv "$TMP/x.qvr" --sample-rows abc
run 2 inspect a.qvr --row-group -1
run 2 scan a.qvr --format xml
run 2 inspect a.qvr --json=yes
run 2 demo --sf -1
run 2 export
run 2 gen lineitem -
err_has "cannot go to stdout"
run 2 import in.csv -

# A good file, then damaged copies of it.
run 0 gen lineitem --sf 0.0005 --row-group-rows 1024 "$TMP/good.qvr"
for cmd in inspect scan export; do
    run 0 $cmd "$TMP/good.qvr"
done
run 0 inspect --json "$TMP/good.qvr"
# --limit 0 is no rows (the header only); --memory-limit takes 1.5G-style sizes.
run 0 scan "$TMP/good.qvr" --limit 0 --format csv
check '[ "$(wc -l < "$TMP/out")" -eq 1 ]' "--limit 0 printed rows"
run 0 --memory-limit 1.5G scan "$TMP/good.qvr" --limit 1 --columns l_orderkey
run 0 inspect --row-group 1 "$TMP/good.qvr"
run 1 inspect --row-group 99 "$TMP/good.qvr"
size=$(wc -c <"$TMP/good.qvr")

# damaged NAME: inspect, scan and export all fail cleanly on $TMP/NAME.
damaged() {
    for cmd in inspect scan export; do
        run 1 $cmd "$TMP/$1"
        err_has "qv $cmd:"
    done
}

for cut in 0 1 7 8 40 $((size / 2)) $((size - 33)) $((size - 32)) $((size - 1)); do
    head -c "$cut" "$TMP/good.qvr" >"$TMP/cut_$cut.qvr"
    damaged "cut_$cut.qvr"
done
# Byte flips spread over the whole file: header, segments, footer, tail.
# The header of a file over 64 KiB is outside the two reads that open it
# (docs/format.md, "Opening in at most two reads"): its magic is checked
# only in smaller files, so a flip there must leave the data readable.
step=$((size / 37))
pos=0
while [ "$pos" -lt "$size" ]; do
    cp "$TMP/good.qvr" "$TMP/flip.qvr"
    printf '\377' | dd of="$TMP/flip.qvr" bs=1 seek="$pos" conv=notrunc 2>/dev/null
    if [ "$pos" -lt 8 ] && [ "$size" -gt 65536 ]; then
        run 0 scan "$TMP/flip.qvr" --limit 1
    elif ! cmp -s "$TMP/good.qvr" "$TMP/flip.qvr"; then
        damaged flip.qvr
    fi
    pos=$((pos + step))
done
# A flipped byte inside a segment is corrupt data, and every command says
# so with the kind (not a failed read: both are EIO).
cp "$TMP/good.qvr" "$TMP/mid.qvr"
printf '\377' | dd of="$TMP/mid.qvr" bs=1 seek=$((size / 3)) conv=notrunc 2>/dev/null
for cmd in inspect scan export; do
    run 1 $cmd "$TMP/mid.qvr"
    err_has "qv $cmd: corrupt: "
    err_has "checksum mismatch"
done
# In a file of at most 64 KiB the one read covers the header: a damaged
# magic is refused.
run 0 gen lineitem --sf 0.00005 --row-group-rows 1024 "$TMP/small.qvr"
if [ "$(wc -c <"$TMP/small.qvr")" -le 65536 ]; then
    printf 'X' | dd of="$TMP/small.qvr" bs=1 seek=0 conv=notrunc 2>/dev/null
    damaged small.qvr
    err_has "no magic at offset 0"
else
    check false "small.qvr is not small"
fi
# The last byte of every region boundary: the tail's magic.
cp "$TMP/good.qvr" "$TMP/flip.qvr"
printf 'X' | dd of="$TMP/flip.qvr" bs=1 seek=$((size - 1)) conv=notrunc 2>/dev/null
damaged flip.qvr
run 1 inspect "$TMP/flip.qvr"
err_has "not a Quiver file"
# Not a Quiver file at all, a directory, a missing file.
printf 'id,name\n1,x\n' >"$TMP/plain.csv"
damaged plain.csv
mkdir -p "$TMP/dir.qvr"
damaged dir.qvr
damaged missing.qvr
err_has "missing.qvr"
# Export of a damaged file to a path leaves nothing there.
run 1 export "$TMP/flip.qvr" "$TMP/never.csv"
check '[ ! -e "$TMP/never.csv" ]' "failed export left a file"
check '[ -z "$(ls "$TMP" | grep "never.csv.tmp")" ]' "failed export left its temporary file"

# A value option given twice is refused: "the last one wins" would drop a filter.
run 2 scan "$TMP/good.qvr" --filter "a > 1" --filter "a < 0"
err_has "option '--filter' is given more than once"
run 2 scan "$TMP/good.qvr" --columns=a --columns b
err_has "given more than once"
# Writing over the input (directly or through a link) is refused; the input survives.
cp "$TMP/good.qvr" "$TMP/self.qvr"
ln -sf self.qvr "$TMP/self-link.qvr"
run 2 export "$TMP/self.qvr" "$TMP/self.qvr"
err_has "would destroy the input"
run 2 export "$TMP/self.qvr" "$TMP/self-link.qvr"
check 'cmp -s "$TMP/good.qvr" "$TMP/self.qvr"' "export over its own input changed it"
printf 'id\n1\n' >"$TMP/self.csv"
run 2 import "$TMP/self.csv" "$TMP/self.csv"
err_has "would destroy the input"
check '[ "$(cat "$TMP/self.csv")" = "$(printf "id\n1")" ]' "import over its own input changed it"
# A time zone too long for qv import's type text is named as such.
zone=$(printf 'Z%.0s' $(seq 1 300))
printf 't\n2020-01-01T00:00:00\n' >"$TMP/ts.csv"
run 2 import "$TMP/ts.csv" "$TMP/ts.qvr" --schema "t:timestamp[us, $zone]"
err_has "TZ at most 255 bytes"

finish
