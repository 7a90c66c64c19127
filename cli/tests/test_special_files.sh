# Special files and symlinks where qv reads or writes a file: never a hang,
# never a special file replaced by a regular one. Every special file is made
# inside $TMP (mkfifo, mknod); every command runs under `timeout`.
. "$(dirname "$0")/lib.sh"

# trun EXPECTED_RC CMD...: run with a 30 s deadline (exit 124 = hung).
trun() {
    want=$1
    shift
    CHECKS=$((CHECKS + 1))
    timeout 30 "$QV" "$@" >"$TMP/out" 2>"$TMP/err"
    rc=$?
    if [ "$rc" = 124 ]; then
        fail "qv $* hung"
    elif [ "$rc" -ge 128 ]; then
        fail "qv $* crashed (exit $rc): $(head -c 2000 "$TMP/err")"
    elif [ "$rc" != "$want" ]; then
        fail "qv $*: exit $rc, expected $want; stderr: $(head -c 1000 "$TMP/err")"
    fi
    return 0
}

trun 0 gen lineitem --sf 0.0005 --row-group-rows 1024 "$TMP/good.qvr"
trun 0 export "$TMP/good.qvr" "$TMP/good.csv"
mkfifo "$TMP/fifo"
mkdir "$TMP/dir"

# Reading a FIFO nobody writes to: refused at once.
for cmd in scan inspect export; do
    trun 1 $cmd "$TMP/fifo"
    err_has "is a FIFO, not a regular file"
done
trun 1 scan "$TMP/dir"
err_has "is a directory, not a regular file"

# Writing a .qvr over special files: refused, the special file stays.
trun 1 import "$TMP/good.csv" "$TMP/fifo"
err_has "is a FIFO; Quiver replaces only regular files"
check '[ -p "$TMP/fifo" ]' "import replaced the FIFO"
trun 1 gen lineitem --sf 0.0005 "$TMP/dir"
err_has "is a directory"
check '[ -d "$TMP/dir" ]' "gen replaced the directory"
trun 1 import "$TMP/good.csv" ""
err_has "empty path"
trun 1 import "$TMP/good.csv" "$TMP/nodir/x.qvr"
err_has "nodir' does not exist"
if mknod "$TMP/null" c 1 3 2>/dev/null; then
    trun 1 import "$TMP/good.csv" "$TMP/null"
    err_has "is a character device"
    check '[ -c "$TMP/null" ]' "import replaced the character device"
    # CSV streams into a character device: written through, not replaced.
    trun 0 export "$TMP/good.qvr" "$TMP/null"
    check '[ -c "$TMP/null" ]' "export replaced the character device"
fi

# CSV export into a FIFO streams into it (a reader is waiting).
cat "$TMP/fifo" >"$TMP/from_fifo.csv" &
reader=$!
trun 0 export "$TMP/good.qvr" "$TMP/fifo"
wait $reader
check 'cmp -s "$TMP/good.csv" "$TMP/from_fifo.csv"' "export through a FIFO differs"
check '[ -p "$TMP/fifo" ]' "export replaced the FIFO"
trun 1 export "$TMP/good.qvr" "$TMP/dir"
err_has "is a directory"
trun 1 export "$TMP/good.qvr" "$TMP/dir/"
err_has "names a directory"
check '[ -z "$(ls -A "$TMP/dir")" ]' "export left files in the directory"

# Symlinks: the target is replaced, the link stays.
trun 0 gen lineitem --sf 0.0002 "$TMP/target.qvr"
ln -s target.qvr "$TMP/link.qvr"
trun 0 import "$TMP/good.csv" "$TMP/link.qvr"
check '[ -L "$TMP/link.qvr" ]' "import replaced the symlink"
trun 0 scan --format csv "$TMP/target.qvr"
check '[ "$(wc -l <"$TMP/out")" = "$(wc -l <"$TMP/good.csv")" ]' "the link's target was not rewritten"
ln -s out.csv "$TMP/csvlink.csv"
trun 0 export "$TMP/good.qvr" "$TMP/csvlink.csv"
check '[ -L "$TMP/csvlink.csv" ]' "export replaced the symlink"
check 'cmp -s "$TMP/good.csv" "$TMP/out.csv"' "export through a dangling link did not create its target"
ln -s fifo "$TMP/fifolink.qvr"
trun 1 import "$TMP/good.csv" "$TMP/fifolink.qvr"
err_has "is a FIFO"

# A temporary file left by a killed writer is removed by the next write.
sh -c 'exit 0' &
dead=$!
wait $dead
if ! kill -0 "$dead" 2>/dev/null; then
    echo junk >"$TMP/good.qvr.tmp.$dead.0"
    echo keep >"$TMP/good.qvr.tmp.$dead.0.bak"
    trun 0 gen lineitem --sf 0.0005 --row-group-rows 1024 "$TMP/good.qvr"
    check '[ ! -e "$TMP/good.qvr.tmp.$dead.0" ]' "stale temporary file not removed"
    check '[ -e "$TMP/good.qvr.tmp.$dead.0.bak" ]' "a file not matching the pattern was removed"
fi
# A file-size limit (ulimit -f) hit while writing: a clean EFBIG error, not
# death by SIGXFSZ with a temporary left behind. gen and import write .qvr
# through a temporary; export streams CSV the same way.
for cmd in gen export; do
    CHECKS=$((CHECKS + 1))
    rm -f "$TMP"/limited.*
    if [ $cmd = gen ]; then
        set -- gen lineitem --sf 0.01 --row-group-rows 1024 "$TMP/limited.out"
    else
        set -- export "$TMP/good.qvr" "$TMP/limited.out"
    fi
    (ulimit -f 8 && exec timeout 30 "$QV" "$@") >"$TMP/out" 2>"$TMP/err"
    rc=$?
    if [ "$rc" != 1 ]; then
        fail "qv $* under ulimit -f 8: exit $rc, expected 1: $(head -c 1000 "$TMP/err")"
    fi
    err_has "too large"
    check '[ -z "$(ls "$TMP" | grep limited)" ]' "qv $cmd under ulimit -f left $(ls "$TMP" | grep limited)"
done
# Ctrl-C (SIGINT) or SIGTERM while writing: qv stops at its next batch, the
# writer removes its temporary, and qv ends killed by that signal (exit
# 128+N). Were the command to finish before the signal, the file must be
# complete; either way no temporary is left.
# --foreground: one signal to qv, as a Ctrl-C is; without it timeout sends
# the signal twice (to qv, then to its process group), and the second one
# kills at once by design, which made this check a race.
for sig in INT TERM; do
    rm -f "$TMP"/sig.*
    timeout --foreground --preserve-status -k 60 -s $sig 0.5 "$QV" gen lineitem --sf 1 "$TMP/sig.qvr" \
        >"$TMP/out" 2>"$TMP/err"
    rc=$?
    CHECKS=$((CHECKS + 1))
    if [ $sig = INT ]; then want=130; else want=143; fi
    if [ "$rc" = "$want" ]; then
        err_has "interrupted; nothing was written"
        check '[ ! -e "$TMP/sig.qvr" ]' "SIG$sig: a file was published"
    elif [ "$rc" = 0 ]; then
        run 0 inspect "$TMP/sig.qvr"
    else
        fail "qv gen on SIG$sig: exit $rc, expected $want (or 0): $(head -c 1000 "$TMP/err")"
    fi
    check '[ -z "$(ls "$TMP" | grep "sig.qvr.tmp")" ]' "SIG$sig left $(ls "$TMP" | grep sig)"
done
rm -f "$TMP"/sig.*
finish
