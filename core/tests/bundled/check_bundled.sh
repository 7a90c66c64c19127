#!/bin/sh
# The bundled static library is fit to go into a JNI library or a wheel:
#  1. a shared object linked against libquiver_bundled.a (probe.c) exports
#     only its own symbol, probe_roundtrip;
#  2. it needs nothing but libc, libm, libpthread and the dynamic loader
#     (plus the sanitizer runtimes in a sanitizer build), so no libzstd,
#     liblz4 or libxxhash has to be on the user's machine;
#  3. no zstd, lz4 or xxHash symbol of the archive has default visibility,
#     so a consumer that does not use --exclude-libs still cannot clash with
#     another copy of those libraries in the same process;
#  4. it works: probe_main dlopen()s it and writes, reads back and compares
#     a file, and round-trips values through zstd and lz4.
#
#   check_bundled.sh PROBE_SO PROBE_MAIN ARCHIVE TMPDIR [NM] [READELF]
set -eu
probe="$1"; main="$2"; archive="$3"; tmp="$4"
nm="${5:-nm}"; readelf="${6:-readelf}"
fail=0
for f in "$probe" "$main" "$archive"; do
    [ -f "$f" ] || { echo "FAIL: $f is missing (was it built?)"; exit 1; }
done

exports="$("$nm" -D --defined-only "$probe" | awk '{print $3}' |
           grep -v -x -e _init -e _fini -e _edata -e _end -e __bss_start | sort)"
if [ "$exports" != "probe_roundtrip" ]; then
    echo "FAIL: $probe exports more than probe_roundtrip:"
    echo "$exports" | sed 's/^/  /'
    fail=1
else
    echo "ok: $probe exports only probe_roundtrip"
fi

needed="$("$readelf" -d "$probe" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')"
bad="$(echo "$needed" | grep -v -E '^(libc|libm|libpthread|libdl)\.so\.[0-9]+$|^ld-linux[-a-z0-9_.]*\.so\.[0-9]+$|^lib(asan|ubsan|tsan)\.so\.[0-9]+$' || true)"
if [ -n "$bad" ]; then
    echo "FAIL: $probe needs libraries beyond libc/libm/libpthread:"
    echo "$bad" | sed 's/^/  /'
    fail=1
else
    echo "ok: $probe needs only:" $needed
fi

# Defined GLOBAL/WEAK symbols of default visibility, by name.
leaked="$("$readelf" -sW "$archive" 2>/dev/null |
          awk '($5 == "GLOBAL" || $5 == "WEAK") && $6 == "DEFAULT" && $7 != "UND" {print $8}' |
          grep -E '^(ZSTD|ZSTDMT|LZ4|HUF|FSE|HIST|ERR_|POOL_|XXH|ZDICT)' | sort -u || true)"
if [ -n "$leaked" ]; then
    echo "FAIL: $archive has codec symbols of default visibility:"
    echo "$leaked" | head -20 | sed 's/^/  /'
    fail=1
else
    echo "ok: no zstd, lz4 or xxHash symbol of $archive is visible"
fi

mkdir -p "$tmp"
file="$tmp/bundled_probe.qvr"
rm -f "$file"
if timeout 120 "$main" "$probe" "$file"; then :; else
    echo "FAIL: probe_main failed"
    fail=1
fi
rm -f "$file"
exit $fail
