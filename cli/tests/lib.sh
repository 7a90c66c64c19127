# Helpers for the qv end-to-end tests: sourced by every test_*.sh, which are
# run as `sh test_x.sh QV TMPDIR DATADIR`.
set -u
QV=$1
TMP=$2
DATA=$3
rm -rf "$TMP"
mkdir -p "$TMP"
FAILS=0
CHECKS=0

fail() {
    echo "FAIL: $*" >&2
    FAILS=$((FAILS + 1))
}

# run EXPECTED_RC CMD...: runs qv with the arguments, stdout to $TMP/out,
# stderr to $TMP/err; checks the exit code. A code >= 128 (a signal, e.g. a
# crash or a sanitizer abort) is always a failure.
run() {
    want=$1
    shift
    CHECKS=$((CHECKS + 1))
    "$QV" "$@" >"$TMP/out" 2>"$TMP/err"
    rc=$?
    if [ "$rc" -ge 128 ]; then
        fail "qv $* crashed (exit $rc): $(head -c 2000 "$TMP/err")"
    elif [ "$rc" != "$want" ]; then
        fail "qv $*: exit $rc, expected $want; stderr: $(head -c 1000 "$TMP/err")"
    fi
    return 0
}

# err_has TEXT: the last command's stderr contains TEXT.
err_has() {
    CHECKS=$((CHECKS + 1))
    grep -qF -- "$1" "$TMP/err" || fail "stderr lacks '$1': $(head -c 1000 "$TMP/err")"
}

# out_has TEXT: the last command's stdout contains TEXT.
out_has() {
    CHECKS=$((CHECKS + 1))
    grep -qF -- "$1" "$TMP/out" || fail "stdout lacks '$1': $(head -c 1000 "$TMP/out")"
}

check() {
    CHECKS=$((CHECKS + 1))
    eval "$1" || fail "$2"
}

finish() {
    if [ "$FAILS" -ne 0 ]; then
        echo "$FAILS of $CHECKS checks failed" >&2
        exit 1
    fi
    echo "all $CHECKS checks passed"
    rm -rf "$TMP"
    exit 0
}
