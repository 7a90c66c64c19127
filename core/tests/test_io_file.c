/* The local-file source and sink (io_file.c) against a hostile file system:
 * files truncated or overwritten in place while a scan or take reads them
 * (EIO or the data as verified, never a crash or garbage rows), special
 * files where a Quiver file is expected (refused without blocking), special
 * files and symlinks at a writer's destination, stale temporary files of
 * dead writers, and a full disk. Every special file is made with mkfifo,
 * mknod or bind inside a temporary directory this test creates. */
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <ftw.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "quiver/format.h"
#include "quiver/scan.h"
#include "format/format_testing.h"
#include "scan_fixture.h"
#include "test_util.h"

static struct qv_pool *pool;
static struct qv_reservation *res;
static char dir[512];

/* ---- write() interposition: a real ENOSPC from the file sink's write ----
 * The library is linked statically into this executable, so its calls to
 * write() resolve to this definition. When `enospc_armed` is set, writes to
 * any descriptor but stdout/stderr fail the way a full disk fails. */
static volatile int enospc_armed;
ssize_t write(int fd, const void *buf, size_t n) {
    if (enospc_armed && fd > 2) {
        errno = ENOSPC;
        return -1;
    }
    return syscall(SYS_write, fd, buf, n);
}

/* fsync() counted, for the durability modes: every fsync the sink makes
 * (of the file and of its directory) goes through here. */
static atomic_int fsyncs;
int fsync(int fd) {
    atomic_fetch_add(&fsyncs, 1);
    return (int)syscall(SYS_fsync, fd);
}

static int rm_entry(const char *p, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st, (void)flag, (void)ftw;
    return remove(p);
}

static int setup(void **state) {
    (void)state;
    assert_int_equal(qv_pool_create(NULL, &pool, NULL), 0);
    assert_int_equal(qv_reservation_create(pool, NULL, &res, NULL), 0);
    tu_path(dir, sizeof dir, "io-file-XXXXXX");
    assert_non_null(mkdtemp(dir));
    /* Nothing here may block for long: a hang fails the test. */
    alarm(240);
    return 0;
}

static int teardown(void **state) {
    (void)state;
    alarm(0);
    nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    assert_int_equal(qv_reservation_used(res), 0);
    qv_reservation_destroy(res);
    qv_pool_destroy(pool);
    return 0;
}

static const char *in_dir(char *buf, size_t cap, const char *name) {
    int n = snprintf(buf, cap, "%s/%s", dir, name);
    assert_true(n > 0 && (size_t)n < cap); /* a truncated path would name another file */
    return buf;
}

/* The fixture's rows, keeping the writer's error. */
static int write_rows(const char *path, int64_t n, int64_t rg_rows, struct qv_error *err) {
    return fx_write_err(path, n, rg_rows, res, err);
}

/* Rows of a readable fixture file, or -1 when it cannot be read. */
static int64_t file_rows(const char *path) {
    struct qv_reader *rd;
    struct qv_reservation *rr;
    assert_int_equal(qv_reservation_create(pool, NULL, &rr, NULL), 0);
    int64_t n = -1;
    if (qv_reader_open(path, NULL, rr, &rd, NULL) == 0) {
        n = qv_reader_num_rows(rd);
        qv_reader_close(rd);
    }
    qv_reservation_destroy(rr);
    return n;
}

/* Entries of `d` whose name holds `part` ("" for all), or -1. */
static int count_named(const char *d, const char *part) {
    DIR *dd = opendir(d);
    if (!dd) return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(dd)) != NULL)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") && strstr(e->d_name, part)) n++;
    closedir(dd);
    return n;
}

static int count_entries(const char *d) {
    return count_named(d, "");
}

/* ---- readers while the file changes under them ---- */

#define ROWS 40000
#define RG_ROWS 4096

/* Checks a batch holds the fixture's rows from *next on (id and v) and
 * advances *next. Returns 0 when every row is right. */
static int check_batch(const struct ArrowArray *a, const int64_t *take, int64_t *next) {
    const struct ArrowArray *id = a->children[0], *v = a->children[1];
    const int64_t *ids = id->buffers[1];
    const int32_t *vs = v->buffers[1];
    const uint8_t *vvalid = v->buffers[0];
    for (int64_t i = 0; i < a->length; i++) {
        int64_t want = take ? take[*next] : *next;
        if (ids[id->offset + i] != want) return -1;
        int64_t j = v->offset + i;
        int valid = !vvalid || ((vvalid[j / 8] >> (j % 8)) & 1);
        if (valid == fx_v_null(want)) return -1;
        if (valid && vs[j] != fx_v(want)) return -1;
        (*next)++;
    }
    return 0;
}

enum change { TRUNCATE, OVERWRITE, APPEND };

/* Scans (or takes from) a fresh file, changes it after the first batch and
 * reads on. Returns the stream's final code; *rows gets the rows returned
 * (all checked correct) and msg the error message. */
static int scan_while_changing(enum change how, int threads, int take_mode, int use_mmap,
                               int64_t *rows, char *msg, size_t cap) {
    char path[600];
    in_dir(path, sizeof path, "changing.qvr");
    assert_int_equal(fx_write(path, ROWS, RG_ROWS, res), 0);
    struct qv_reservation *rr;
    assert_int_equal(qv_reservation_create(pool, NULL, &rr, NULL), 0);
    struct qv_reader *rd;
    struct qv_reader_options ro = {.mmap = use_mmap};
    struct qv_error err;
    assert_int_equal(qv_reader_open(path, &ro, rr, &rd, &err), 0);
    static int64_t take[ROWS / 7 + 1];
    int64_t n_take = 0;
    for (int64_t i = 0; i < ROWS; i += 7) take[n_take++] = i;
    struct qv_scan_options so = {.batch_rows = 1000, .threads = threads};
    if (take_mode) {
        so.take = take;
        so.n_take = n_take;
    }
    struct ArrowArrayStream st;
    assert_int_equal(qv_scan_open(rd, &so, rr, &st, &err), 0);
    int64_t next = 0;
    int rc = 0, changed = 0;
    for (;;) {
        struct ArrowArray a;
        rc = st.get_next(&st, &a);
        if (rc) break;
        if (!a.release) break;
        assert_int_equal(check_batch(&a, take_mode ? take : NULL, &next), 0);
        a.release(&a);
        if (!changed) {
            changed = 1;
            int fd = open(path, O_RDWR);
            assert_true(fd >= 0);
            if (how == TRUNCATE) {
                assert_int_equal(ftruncate(fd, 4096), 0);
            } else if (how == OVERWRITE) {
                /* Every data byte (header and footer left alone). */
                off_t size = lseek(fd, 0, SEEK_END);
                static uint8_t junk[65536];
                memset(junk, 0xA5, sizeof junk);
                for (off_t o = 8; o < size - 4096; o += (off_t)sizeof junk) {
                    size_t len = (size_t)(size - 4096 - o) < sizeof junk ? (size_t)(size - 4096 - o)
                                                                          : sizeof junk;
                    assert_int_equal(pwrite(fd, junk, len, o), (ssize_t)len);
                }
            } else {
                static uint8_t junk[100000];
                memset(junk, 0x5A, sizeof junk);
                assert_int_equal(pwrite(fd, junk, sizeof junk, lseek(fd, 0, SEEK_END)),
                                 (ssize_t)sizeof junk);
            }
            close(fd);
        }
    }
    *rows = next;
    snprintf(msg, cap, "%s", rc && st.get_last_error(&st) ? st.get_last_error(&st) : "");
    st.release(&st);
    qv_reader_close(rd);
    qv_reservation_destroy(rr);
    unlink(path);
    return rc;
}

static void test_truncate_during_scan(void **state) {
    (void)state;
    for (int threads = 0; threads < 2; threads++) {
        int64_t rows;
        char msg[QV_ERROR_MESSAGE_MAX];
        int rc = scan_while_changing(TRUNCATE, threads ? 2 : QV_SCAN_SYNC, 0, 0, &rows, msg,
                                     sizeof msg);
        assert_int_equal(rc, EIO);
        assert_true(rows >= 1000 && rows < ROWS);
        assert_non_null(strstr(msg, "changing.qvr"));
        assert_non_null(strstr(msg, "row group"));
        assert_non_null(strstr(msg, "column '"));
        assert_non_null(strstr(msg, "offset"));
    }
}

static void test_truncate_during_take(void **state) {
    (void)state;
    int64_t rows;
    char msg[QV_ERROR_MESSAGE_MAX];
    int rc = scan_while_changing(TRUNCATE, QV_SCAN_SYNC, 1, 0, &rows, msg, sizeof msg);
    assert_int_equal(rc, EIO);
    assert_true(rows >= 1 && rows < ROWS / 7 + 1);
    assert_non_null(strstr(msg, "row group"));
    assert_non_null(strstr(msg, "truncated"));
}

/* Bytes overwritten in place: the batches of the row group whose bytes were
 * already read and verified come back right (they are decoded from the
 * verified copy); the next row group fails its checksum. Never wrong rows
 * (check_batch asserts every row). */
static void test_overwrite_during_scan(void **state) {
    (void)state;
    for (int mode = 0; mode < 3; mode++) {
        int64_t rows;
        char msg[QV_ERROR_MESSAGE_MAX];
        int rc = scan_while_changing(OVERWRITE, mode == 1 ? 2 : QV_SCAN_SYNC, mode == 2, 0, &rows,
                                     msg, sizeof msg);
        assert_int_equal(rc, EIO);
        assert_non_null(strstr(msg, "checksum mismatch"));
        assert_non_null(strstr(msg, "row group"));
        if (mode == 0) assert_true(rows >= RG_ROWS); /* the rest of row group 0 */
    }
}

/* A file growing while it is read (an appender, a log shipper): the reader
 * reads the file as it was opened. */
static void test_append_during_scan(void **state) {
    (void)state;
    int64_t rows;
    char msg[QV_ERROR_MESSAGE_MAX];
    assert_int_equal(scan_while_changing(APPEND, QV_SCAN_SYNC, 0, 0, &rows, msg, sizeof msg), 0);
    assert_int_equal(rows, ROWS);
}

/* The mapped reader (opt-in) reads the same data when nothing changes. */
static void test_mmap_option(void **state) {
    (void)state;
    char path[600];
    in_dir(path, sizeof path, "mapped.qvr");
    assert_int_equal(fx_write(path, ROWS, RG_ROWS, res), 0);
    for (int m = 0; m < 2; m++) {
        struct qv_reservation *rr;
        assert_int_equal(qv_reservation_create(pool, NULL, &rr, NULL), 0);
        struct qv_reader *rd;
        struct qv_reader_options ro = {.mmap = m};
        assert_int_equal(qv_reader_open(path, &ro, rr, &rd, NULL), 0);
        struct qv_scan_options so = {.batch_rows = 3000, .threads = QV_SCAN_SYNC};
        struct ArrowArrayStream st;
        assert_int_equal(qv_scan_open(rd, &so, rr, &st, NULL), 0);
        int64_t next = 0;
        for (;;) {
            struct ArrowArray a;
            assert_int_equal(st.get_next(&st, &a), 0);
            if (!a.release) break;
            assert_int_equal(check_batch(&a, NULL, &next), 0);
            a.release(&a);
        }
        assert_int_equal(next, ROWS);
        st.release(&st);
        qv_reader_close(rd);
        qv_reservation_destroy(rr);
    }
    struct qv_source src;
    assert_int_equal(qv_source_open_file(path, &src, NULL), 0);
    assert_null(src.base); /* pread by default */
    qv_source_close(&src);
    assert_int_equal(qv_source_open_file_mapped(path, &src, NULL), 0);
    assert_non_null(src.base);
    qv_source_close(&src);
}

/* A column reader opened after the file shrank: EIO naming everything. */
static void test_column_reader_short_read(void **state) {
    (void)state;
    char path[600];
    in_dir(path, sizeof path, "short.qvr");
    assert_int_equal(fx_write(path, ROWS, RG_ROWS, res), 0);
    struct qv_reservation *rr;
    assert_int_equal(qv_reservation_create(pool, NULL, &rr, NULL), 0);
    struct qv_reader *rd;
    assert_int_equal(qv_reader_open(path, NULL, rr, &rd, NULL), 0);
    assert_int_equal(truncate(path, (off_t)(qv_reader_file_size(rd) / 2)), 0);
    int64_t last = qv_reader_num_row_groups(rd) - 1;
    struct qv_column_reader *cr;
    struct qv_error err;
    /* A format 2 file read with pread is read at the first decode: the
     * open succeeds and the read fails (a format 1 file fails the open). */
    int rc = qv_column_reader_open(rd, last, 0, rr, &cr, &err);
    if (rc == 0) {
        struct ArrowArray a;
        rc = qv_column_reader_read(cr, 0, qv_reader_row_group_rows(rd, last), &a, &err);
        qv_column_reader_close(cr);
    }
    assert_int_equal(rc, EIO);
    assert_non_null(strstr(err.message, "short.qvr"));
    assert_non_null(strstr(err.message, "column 'id'"));
    char want[64];
    snprintf(want, sizeof want, "row group %lld", (long long)last);
    assert_non_null(strstr(err.message, want));
    assert_non_null(strstr(err.message, "short read"));
    /* The system gave fewer bytes than the file had: an I/O failure, not
     * a corrupt file. */
    assert_int_equal(err.kind, QV_ERROR_IO);
    /* Row group 0 is still whole. */
    assert_int_equal(qv_column_reader_open(rd, 0, 0, rr, &cr, &err), 0);
    qv_column_reader_close(cr);
    qv_reader_close(rd);
    qv_reservation_destroy(rr);
}

/* ---- special files where a Quiver file is expected ---- */

static void expect_refused(const char *path, int code, const char *word) {
    struct qv_reader *rd;
    struct qv_error err;
    struct qv_reader_options mapped = {.mmap = 1};
    assert_int_equal(qv_reader_open(path, NULL, res, &rd, &err), code);
    assert_non_null(strstr(err.message, word));
    assert_int_equal(qv_reader_open(path, &mapped, res, &rd, &err), code);
    assert_non_null(strstr(err.message, word));
}

static void test_open_special_files(void **state) {
    (void)state;
    char p[600];
    /* A FIFO nobody writes to: opening it for reading would block forever
     * (the alarm set in setup fails the test then). */
    assert_int_equal(mkfifo(in_dir(p, sizeof p, "fifo"), 0600), 0);
    expect_refused(p, EINVAL, "is a FIFO, not a regular file");
    expect_refused(dir, EINVAL, "is a directory");
    int s = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    in_dir(p, sizeof p, "sock");
    if (s >= 0 && strlen(p) < sizeof sa.sun_path) {
        strcpy(sa.sun_path, p);
        assert_int_equal(bind(s, (struct sockaddr *)&sa, sizeof sa), 0);
        expect_refused(p, EINVAL, "is a socket");
    }
    if (s >= 0) close(s);
    if (mknod(in_dir(p, sizeof p, "null"), S_IFCHR | 0600, makedev(1, 3)) == 0)
        expect_refused(p, EINVAL, "is a character device");
    else
        assert_true(errno == EPERM || errno == EACCES);
    expect_refused("", EINVAL, "empty path");
    expect_refused(in_dir(p, sizeof p, "missing.qvr"), ENOENT, "missing.qvr");
    /* The system's reason is the code, not EIO ("corrupt"). */
    char q[600];
    assert_int_equal(symlink("loop-b", in_dir(p, sizeof p, "loop-a")), 0);
    assert_int_equal(symlink("loop-a", in_dir(q, sizeof q, "loop-b")), 0);
    expect_refused(p, ELOOP, "symbolic links");
    char longname[400];
    memset(longname, 'n', 300);
    longname[300] = '\0';
    expect_refused(in_dir(p, sizeof p, longname), ENAMETOOLONG, "too long");
    unlink(in_dir(p, sizeof p, "loop-a"));
    unlink(in_dir(p, sizeof p, "loop-b"));
    /* Empty and tiny regular files, and a /proc file (size 0 while it has
     * content) and a copy of it: corrupt, not a crash. */
    int fd = open(in_dir(p, sizeof p, "empty.qvr"), O_WRONLY | O_CREAT, 0644);
    close(fd);
    expect_refused(p, EIO, "too small");
    expect_refused("/proc/self/status", EIO, "too small");
    char cmd[1300];
    snprintf(cmd, sizeof cmd, "cp /proc/self/status '%s/status.qvr'", dir);
    assert_int_equal(system(cmd), 0);
    expect_refused(in_dir(p, sizeof p, "status.qvr"), EIO, "not a Quiver file");
}

/* ---- special files and symlinks at a writer's destination ---- */

static void expect_write_refused(const char *path, int code, const char *word) {
    struct qv_error err;
    int before = count_entries(dir);
    assert_int_equal(write_rows(path, 100, 1024, &err), code);
    assert_non_null(strstr(err.message, word));
    assert_int_equal(count_entries(dir), before); /* no temporary file left */
}

static void test_write_to_special_files(void **state) {
    (void)state;
    char p[600];
    struct stat st;
    assert_int_equal(mkfifo(in_dir(p, sizeof p, "fifo"), 0600), 0);
    expect_write_refused(p, EINVAL, "is a FIFO; Quiver replaces only regular files");
    assert_int_equal(lstat(p, &st), 0);
    assert_true(S_ISFIFO(st.st_mode));
    assert_int_equal(mkdir(in_dir(p, sizeof p, "sub"), 0700), 0);
    expect_write_refused(p, EINVAL, "is a directory");
    assert_int_equal(lstat(p, &st), 0);
    assert_true(S_ISDIR(st.st_mode));
    char q[700];
    snprintf(q, sizeof q, "%s/", p);
    expect_write_refused(q, EINVAL, "names a directory");
    if (mknod(in_dir(p, sizeof p, "null"), S_IFCHR | 0666, makedev(1, 3)) == 0) {
        expect_write_refused(p, EINVAL, "is a character device");
        assert_int_equal(lstat(p, &st), 0);
        assert_true(S_ISCHR(st.st_mode));
    } else {
        assert_true(errno == EPERM || errno == EACCES);
    }
    int s = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    in_dir(p, sizeof p, "sock");
    if (s >= 0 && strlen(p) < sizeof sa.sun_path) {
        strcpy(sa.sun_path, p);
        assert_int_equal(bind(s, (struct sockaddr *)&sa, sizeof sa), 0);
        expect_write_refused(p, EINVAL, "is a socket");
    }
    if (s >= 0) close(s);
    expect_write_refused("", EINVAL, "empty path");
    expect_write_refused(in_dir(p, sizeof p, "nodir/x.qvr"), ENOENT, "nodir' does not exist");
    /* A regular file is replaced. */
    assert_int_equal(write_rows(in_dir(p, sizeof p, "plain.qvr"), 10, 1024, NULL), 0);
    assert_int_equal(write_rows(p, 20, 1024, NULL), 0);
    assert_int_equal(file_rows(p), 20);
    /* A directory component that is a regular file. */
    expect_write_refused(in_dir(q, sizeof q, "plain.qvr/x.qvr"), ENOTDIR, "not a directory");
}

static void test_write_through_symlinks(void **state) {
    (void)state;
    char target[600], link[600], buf[600];
    struct stat st;
    /* Relative link to a regular file: the target is replaced, the link
     * stays a link to it. */
    assert_int_equal(write_rows(in_dir(target, sizeof target, "target.qvr"), 10, 1024, NULL), 0);
    assert_int_equal(symlink("target.qvr", in_dir(link, sizeof link, "link.qvr")), 0);
    assert_int_equal(write_rows(link, 30, 1024, NULL), 0);
    assert_int_equal(lstat(link, &st), 0);
    assert_true(S_ISLNK(st.st_mode));
    ssize_t n = readlink(link, buf, sizeof buf - 1);
    assert_true(n > 0);
    buf[n] = 0;
    assert_string_equal(buf, "target.qvr");
    assert_int_equal(file_rows(target), 30);
    /* A chain of links, the last one absolute. */
    assert_int_equal(symlink(target, in_dir(buf, sizeof buf, "abs.qvr")), 0);
    assert_int_equal(symlink("abs.qvr", in_dir(link, sizeof link, "chain.qvr")), 0);
    assert_int_equal(write_rows(link, 40, 1024, NULL), 0);
    assert_int_equal(file_rows(target), 40);
    assert_int_equal(lstat(buf, &st), 0);
    assert_true(S_ISLNK(st.st_mode));
    /* Dangling link: the file it names is created. */
    assert_int_equal(mkdir(in_dir(buf, sizeof buf, "d"), 0700), 0);
    assert_int_equal(symlink("d/new.qvr", in_dir(link, sizeof link, "dangling.qvr")), 0);
    assert_int_equal(write_rows(link, 50, 1024, NULL), 0);
    assert_int_equal(file_rows(in_dir(buf, sizeof buf, "d/new.qvr")), 50);
    assert_int_equal(lstat(link, &st), 0);
    assert_true(S_ISLNK(st.st_mode));
    /* Dangling into a directory that does not exist. */
    assert_int_equal(symlink("nowhere/new.qvr", in_dir(link, sizeof link, "dangling2.qvr")), 0);
    expect_write_refused(link, ENOENT, "nowhere' does not exist");
    /* Links to special files are refused, naming the target. */
    assert_int_equal(mkfifo(in_dir(buf, sizeof buf, "fifo"), 0600), 0);
    assert_int_equal(symlink("fifo", in_dir(link, sizeof link, "tofifo.qvr")), 0);
    expect_write_refused(link, EINVAL, "is a FIFO");
    assert_int_equal(symlink("d", in_dir(link, sizeof link, "todir.qvr")), 0);
    expect_write_refused(link, EINVAL, "is a directory");
    /* A loop. */
    assert_int_equal(symlink("loop2.qvr", in_dir(link, sizeof link, "loop1.qvr")), 0);
    assert_int_equal(symlink("loop1.qvr", in_dir(buf, sizeof buf, "loop2.qvr")), 0);
    expect_write_refused(link, ELOOP, "symbolic links");
}

/* ---- temporary files of dead writers ---- */

static pid_t dead_pid(void) {
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) _exit(0);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    return pid; /* reaped: kill(pid, 0) is ESRCH until the pid is reused */
}

static void touch(const char *name) {
    char p[700];
    int fd = open(in_dir(p, sizeof p, name), O_WRONLY | O_CREAT | O_EXCL, 0644);
    assert_true(fd >= 0);
    assert_int_equal(syscall(SYS_write, fd, "x", 1), 1);
    close(fd);
}

static int exists(const char *name) {
    char p[700];
    struct stat st;
    return lstat(in_dir(p, sizeof p, name), &st) == 0;
}

/* Leaves in `dir` the temporaries of dead writers (and near misses), writes
 * out.qvr with the sink in `mode` (qv_sink_force_temporary), and checks
 * which were removed: all the stale ones when `removed_expected`, none
 * otherwise. */
static void stale_temporaries(int mode, int target_exists, int removed_expected) {
    qv_sink_force_temporary(mode);
    char p[700];
    if (target_exists) assert_int_equal(write_rows(in_dir(p, sizeof p, "out.qvr"), 3, 1024, NULL), 0);
    pid_t dead = dead_pid(), dead2 = dead_pid();
    char n[20][128];
    int k = 0;
    /* Removed: exact pattern, regular file, dead pid, unlocked. */
    snprintf(n[k++], 128, "out.qvr.tmp.%d.0", (int)dead);
    snprintf(n[k++], 128, "out.qvr.tmp.%d.17", (int)dead2);
    int removed = k;
    /* Kept: near misses, live pids, other names, a locked one. */
    snprintf(n[k++], 128, "out.qvr.tmp.%d.0x", (int)dead);
    snprintf(n[k++], 128, "out.qvr.tmp.%d.", (int)dead);
    snprintf(n[k++], 128, "out.qvr.tmp.%d", (int)dead);
    snprintf(n[k++], 128, "out.qvr.tmp.0%d.1", (int)dead);
    snprintf(n[k++], 128, "out.qvr.tmpx.%d.0", (int)dead);
    snprintf(n[k++], 128, "out.qvrx.tmp.%d.0", (int)dead);
    snprintf(n[k++], 128, "xout.qvr.tmp.%d.0", (int)dead);
    snprintf(n[k++], 128, "other.qvr.tmp.%d.0", (int)dead);
    snprintf(n[k++], 128, "out.qvr.tmp.1.0");                  /* init is alive */
    snprintf(n[k++], 128, "out.qvr.tmp.%d.5", (int)getppid()); /* alive */
    snprintf(n[k++], 128, "out.qvr.tmp.%d.999", (int)getpid()); /* ours */
    snprintf(n[k++], 128, "out.qvr.tmp.%d.3", (int)dead);       /* locked below */
    int locked = k - 1;
    for (int i = 0; i < k; i++) touch(n[i]);
    int lfd = open(in_dir(p, sizeof p, n[locked]), O_RDONLY);
    assert_true(lfd >= 0);
    assert_int_equal(flock(lfd, LOCK_EX), 0);
    /* A directory matching the pattern is not a temporary file. */
    char dname[128];
    snprintf(dname, sizeof dname, "out.qvr.tmp.%d.4", (int)dead);
    assert_int_equal(mkdir(in_dir(p, sizeof p, dname), 0700), 0);
    long scans = qv_sink_directory_scans();
    assert_int_equal(write_rows(in_dir(p, sizeof p, "out.qvr"), 10, 1024, NULL), 0);
    assert_int_equal(qv_sink_directory_scans() - scans, removed_expected);
    for (int i = 0; i < k; i++) {
        if (i < removed && removed_expected) assert_false(exists(n[i]));
        else assert_true(exists(n[i]));
    }
    assert_true(exists(dname));
    close(lfd);
    assert_int_equal(file_rows(in_dir(p, sizeof p, "out.qvr")), 10);
    qv_sink_force_temporary(0);
}

/* Named temporaries (file systems without O_TMPFILE): every create looks. */
static void test_stale_temporaries_named(void **state) {
    (void)state;
    stale_temporaries(1, 0, 1);
}

/* Unnamed temporaries: replacing a file looks for what older or named
 * writers left; creating a new one does not list the directory. */
static void test_stale_temporaries_unnamed(void **state) {
    (void)state;
    stale_temporaries(0, 1, 1);
}

static void test_stale_temporaries_unnamed_new_file(void **state) {
    (void)state;
    stale_temporaries(0, 0, 0);
}

/* Whether this directory's file system makes unnamed files (O_TMPFILE). */
static int has_unnamed_files(void) {
    int fd = open(dir, O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
    if (fd < 0) return 0;
    close(fd);
    return 1;
}

/* Writes `len` bytes of a pattern through a sink to `path`, checking the
 * directory holds `extra_while_open` more entries while it is open (0: the
 * temporary has no name), and reads them back. */
static void sink_round_trip(const char *path, size_t len, int extra_while_open) {
    int before = count_entries(dir);
    struct stat st;
    int existed = stat(path, &st) == 0;
    unsigned char *buf = malloc(len), *back = malloc(len);
    assert_non_null(buf);
    assert_non_null(back);
    for (size_t i = 0; i < len; i++) buf[i] = (unsigned char)(i * 131 + len);
    struct qv_sink s;
    assert_int_equal(qv_sink_open_file(path, &s, NULL), 0);
    for (size_t at = 0; at < len; at += 100000)
        assert_int_equal(qv_sink_write(&s, buf + at, len - at < 100000 ? len - at : 100000, NULL), 0);
    assert_int_equal(count_entries(dir), before + extra_while_open);
    assert_int_equal(qv_sink_finish(&s, NULL), 0);
    qv_sink_close(&s);
    assert_int_equal(count_entries(dir), before + !existed);
    int fd = open(path, O_RDONLY);
    assert_true(fd >= 0);
    assert_int_equal(fstat(fd, &st), 0);
    assert_int_equal((size_t)st.st_size, len);
    assert_int_equal(pread(fd, back, len, 0), (ssize_t)len);
    close(fd);
    assert_memory_equal(buf, back, len);
    free(buf);
    free(back);
}

/* Unnamed temporaries: nothing is visible until finish, a new file is
 * linked at its name in one step, an existing one replaced through a
 * temporary name; creating many files in one directory never lists it (a
 * loop writing N files costs O(N), not O(N^2)); abort leaves nothing. */
static void test_unnamed_temporaries(void **state) {
    (void)state;
    if (!has_unnamed_files()) skip();
    char p[700];
    long scans = qv_sink_directory_scans();
    for (int i = 0; i < 50; i++) {
        char name[32];
        snprintf(name, sizeof name, "many-%d.bin", i);
        sink_round_trip(in_dir(p, sizeof p, name), 1000 + (size_t)i, 0);
    }
    assert_int_equal(qv_sink_directory_scans(), scans);
    assert_int_equal(count_entries(dir), 50);
    /* A replacement looks once for leftovers of its name. */
    sink_round_trip(in_dir(p, sizeof p, "many-7.bin"), 300000, 0);
    assert_int_equal(qv_sink_directory_scans(), scans + 1);
    /* Abort: nothing was ever named. */
    struct qv_sink s;
    assert_int_equal(qv_sink_open_file(in_dir(p, sizeof p, "gone.bin"), &s, NULL), 0);
    assert_int_equal(qv_sink_write(&s, "abc", 3, NULL), 0);
    qv_sink_close(&s);
    assert_false(exists("gone.bin"));
    assert_int_equal(count_entries(dir), 50);
    /* The directory removed under an open sink (possible: its temporary has
     * no name): finish fails naming it, and later sinks still link. */
    char sub[700];
    assert_int_equal(mkdir(in_dir(sub, sizeof sub, "sub"), 0700), 0);
    assert_true(snprintf(p, sizeof p, "%.600s/x.bin", sub) < (int)sizeof p);
    assert_int_equal(qv_sink_open_file(p, &s, NULL), 0);
    assert_int_equal(qv_sink_write(&s, "abc", 3, NULL), 0);
    assert_int_equal(rmdir(sub), 0);
    struct qv_error err;
    assert_int_equal(qv_sink_finish(&s, &err), ENOENT);
    assert_non_null(strstr(err.message, "x.bin"));
    assert_non_null(strstr(err.message, "sub"));
    qv_sink_close(&s);
    sink_round_trip(in_dir(p, sizeof p, "after.bin"), 10, 0);
}

/* Where an unnamed file cannot be linked (no /proc, no capability), its
 * bytes are copied into a named temporary at finish (more than one copy
 * buffer here), and later sinks of the process make named files at once. */
static void test_unnamed_copy_fallback(void **state) {
    (void)state;
    if (!has_unnamed_files()) skip();
    char p[700];
    qv_sink_force_temporary(2);
    sink_round_trip(in_dir(p, sizeof p, "copied.bin"), 3u << 20, 0);
    sink_round_trip(in_dir(p, sizeof p, "copied.bin"), 5000, 1); /* named now */
    sink_round_trip(in_dir(p, sizeof p, "second.bin"), 7000, 1);
    /* A full disk during the copy: ENOSPC, nothing left, the old file kept. */
    qv_sink_force_temporary(2);
    struct qv_sink s;
    assert_int_equal(qv_sink_open_file(in_dir(p, sizeof p, "second.bin"), &s, NULL), 0);
    assert_int_equal(qv_sink_write(&s, "abcdef", 6, NULL), 0);
    enospc_armed = 1;
    struct qv_error err;
    int rc = qv_sink_finish(&s, &err);
    enospc_armed = 0;
    assert_int_equal(rc, ENOSPC);
    assert_non_null(strstr(err.message, "second.bin"));
    assert_non_null(strstr(err.message, "disk full"));
    assert_non_null(strstr(err.message, ".tmp."));
    qv_sink_close(&s);
    assert_int_equal(count_entries(dir), 2);
    struct stat st;
    assert_int_equal(stat(p, &st), 0);
    assert_int_equal(st.st_size, 7000);
    qv_sink_force_temporary(0);
}

/* Durability: QV_DURABLE fsyncs the file and its directory at finish,
 * QV_NOT_DURABLE neither; both publish the same bytes under the name only
 * at finish, both leave nothing (and the old file) on abort or failure,
 * through unnamed and named temporaries alike. Any other value is EINVAL
 * before anything is created, from the sink and from the writer. */
static void durability_modes(int temporary_mode) {
    char p[700];
    qv_sink_force_temporary(temporary_mode);
    for (int durable = 0; durable < 2; durable++) {
        int mode = durable ? QV_DURABLE : QV_NOT_DURABLE;
        const char *name = durable ? "durable.bin" : "fast.bin";
        in_dir(p, sizeof p, name);
        for (int round = 0; round < 2; round++) { /* create, then replace */
            struct qv_sink s;
            assert_int_equal(qv_sink_open_file_durability(p, mode, &s, NULL), 0);
            char data[5000];
            memset(data, 'a' + round, sizeof data);
            assert_int_equal(qv_sink_write(&s, data, sizeof data, NULL), 0);
            struct stat st;
            if (round == 0) assert_false(exists(name)); /* nothing before finish */
            else assert_int_equal(stat(p, &st) == 0 ? st.st_size : -1, 5000);
            int before = atomic_load(&fsyncs);
            assert_int_equal(qv_sink_finish(&s, NULL), 0);
            assert_int_equal(atomic_load(&fsyncs) - before, durable ? 2 : 0);
            qv_sink_close(&s);
            int fd = open(p, O_RDONLY);
            assert_true(fd >= 0);
            char back[5001];
            assert_int_equal(read(fd, back, sizeof back), 5000);
            assert_int_equal(back[4999], 'a' + round);
            close(fd);
        }
        /* Abort after writing: the old file stays whole, nothing else. */
        int entries = count_entries(dir);
        struct qv_sink s;
        assert_int_equal(qv_sink_open_file_durability(p, mode, &s, NULL), 0);
        assert_int_equal(qv_sink_write(&s, "xyz", 3, NULL), 0);
        qv_sink_abort(&s);
        qv_sink_close(&s);
        assert_int_equal(count_entries(dir), entries);
        struct stat st;
        assert_int_equal(stat(p, &st), 0);
        assert_int_equal(st.st_size, 5000);
        /* A full disk mid-write: the error, and the old file untouched. */
        assert_int_equal(qv_sink_open_file_durability(p, mode, &s, NULL), 0);
        enospc_armed = 1;
        struct qv_error err;
        assert_int_equal(qv_sink_write(&s, "xyz", 3, &err), ENOSPC);
        enospc_armed = 0;
        qv_sink_close(&s);
        assert_int_equal(count_entries(dir), entries);
        assert_int_equal(stat(p, &st), 0);
        assert_int_equal(st.st_size, 5000);
    }
    /* The writer refuses a bad durability before the file exists. */
    struct qv_schema *schema;
    assert_int_equal(fx_schema(res, &schema), 0);
    struct qv_writer_options wo = {.durability = 5};
    struct qv_writer *w;
    struct qv_error werr;
    assert_int_equal(qv_writer_open(in_dir(p, sizeof p, "w.qv"), schema, &wo, res, &w, &werr),
                     EINVAL);
    assert_non_null(strstr(werr.message, "durability"));
    assert_false(exists("w.qv"));
    wo.durability = QV_NOT_DURABLE;
    assert_int_equal(qv_writer_open(p, schema, &wo, res, &w, &werr), 0);
    int before = atomic_load(&fsyncs);
    assert_int_equal(qv_writer_finish(w, &werr), 0);
    assert_int_equal(atomic_load(&fsyncs), before);
    qv_writer_close(w);
    assert_true(exists("w.qv"));
    qv_schema_destroy(schema);
    struct qv_sink s;
    struct qv_error err;
    int entries = count_entries(dir);
    assert_int_equal(qv_sink_open_file_durability(in_dir(p, sizeof p, "bad.bin"), 2, &s, &err),
                     EINVAL);
    assert_non_null(strstr(err.message, "durability"));
    assert_int_equal(qv_sink_open_file_durability(p, -1, &s, &err), EINVAL);
    assert_int_equal(count_entries(dir), entries);
    qv_sink_force_temporary(0);
}

static void test_durability_unnamed(void **state) {
    (void)state;
    durability_modes(0);
}

static void test_durability_named(void **state) {
    (void)state;
    durability_modes(1);
}

/* A live writer in this process is never taken for a stale one, even by
 * another writer to the same path. */
static void test_concurrent_writers_same_path(void **state) {
    (void)state;
    char p[600];
    in_dir(p, sizeof p, "same.qvr");
    struct qv_sink a, b;
    assert_int_equal(qv_sink_open_file(p, &a, NULL), 0);
    assert_int_equal(qv_sink_open_file(p, &b, NULL), 0);
    assert_int_equal(qv_sink_write(&a, "12345678", 8, NULL), 0);
    assert_int_equal(qv_sink_finish(&a, NULL), 0);
    qv_sink_close(&a);
    assert_int_equal(qv_sink_write(&b, "abcdefgh", 8, NULL), 0);
    assert_int_equal(qv_sink_finish(&b, NULL), 0);
    qv_sink_close(&b);
    char buf[9] = {0};
    int fd = open(p, O_RDONLY);
    assert_int_equal(read(fd, buf, 8), 8);
    close(fd);
    assert_string_equal(buf, "abcdefgh");
}

/* ---- a full disk ---- */

/* A write failing with ENOSPC (the libc call the sink makes fails): the
 * writer reports ENOSPC naming the file, the temporary file and "disk
 * full"; nothing is left behind and the old file is untouched. */
static void disk_full(int mode) {
    qv_sink_force_temporary(mode);
    char p[600];
    in_dir(p, sizeof p, "full.qvr");
    assert_int_equal(write_rows(p, 10, 1024, NULL), 0);
    int before = count_entries(dir);
    struct qv_error err;
    enospc_armed = 1;
    int rc = write_rows(p, 5000, 1024, &err);
    enospc_armed = 0;
    assert_int_equal(rc, ENOSPC);
    assert_non_null(strstr(err.message, "full.qvr"));
    assert_non_null(strstr(err.message, "disk full"));
    assert_non_null(strstr(err.message, mode == 1 ? ".tmp." : "temporary file"));
    assert_non_null(strstr(err.message, "write of"));
    assert_int_equal(count_entries(dir), before);
    assert_int_equal(file_rows(p), 10);
    qv_sink_force_temporary(0);
}

static void test_disk_full(void **state) {
    (void)state;
    disk_full(0);
}

static void test_disk_full_named(void **state) {
    (void)state;
    disk_full(1);
}

/* A real limit from the kernel: RLIMIT_FSIZE in a child (SIGXFSZ ignored)
 * makes write fail with EFBIG, which is kept as the code. */
static void test_file_size_limit(void **state) {
    (void)state;
    char p[600];
    in_dir(p, sizeof p, "limited.qvr");
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        signal(SIGXFSZ, SIG_IGN);
        struct rlimit rl = {16384, 16384};
        if (setrlimit(RLIMIT_FSIZE, &rl) != 0) _exit(10);
        struct qv_error err;
        int rc = write_rows(p, 20000, 4096, &err);
        if (rc != EFBIG) _exit(11);
        if (!strstr(err.message, "limited.qvr") || !strstr(err.message, "too large")) _exit(12);
        _exit(0);
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    assert_int_equal(count_entries(dir), 0); /* the child's temporary file is gone */
}

/* ---- attacks between open and finish ---- */

/* Entries of `dir` whose name holds ".tmp." (temporaries left behind). */
static int count_temporaries(const char *d) {
    return count_named(d, ".tmp.");
}

static int open_fds(void) {
    return count_entries("/proc/self/fd");
}

/* Makes `path` a regular file holding `data`. */
static void put_file(const char *path, const char *data) {
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    assert_true(fd >= 0);
    size_t n = strlen(data);
    assert_int_equal(syscall(SYS_write, fd, data, n), (long)n);
    close(fd);
}

/* Waits for child `pid`: its exit code (-1 when it did not exit). */
static int child_exit_code(pid_t pid) {
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* The modes a test runs in: unnamed (where the file system has them),
 * named, unnamed whose naming fails (the copy). */
static int mode_applies(int mode) {
    return mode == 1 || has_unnamed_files();
}
#define FOR_MODES(mode) \
    for (int mode = 0; mode < 3; mode++) \
        if (mode_applies(mode))

/* A FIFO, a directory or a symlink put at the destination after open (the
 * destination absent or a regular file at open): finish refuses it, leaves
 * it as it is, leaves no temporary, and nothing else is replaced. */
static void test_destination_swapped_before_finish(void **state) {
    (void)state;
    char p[700], other[700];
    in_dir(p, sizeof p, "swap.qvr");
    in_dir(other, sizeof other, "other.qvr");
    put_file(other, "other");
    FOR_MODES(mode) {
        for (int existed = 0; existed < 2; existed++) {
            for (int kind = 0; kind < 3; kind++) {
                qv_sink_force_temporary(mode);
                if (existed) put_file(p, "");
                int fds = open_fds();
                struct qv_sink s;
                assert_int_equal(qv_sink_open_file(p, &s, NULL), 0);
                assert_int_equal(qv_sink_write(&s, "payload", 7, NULL), 0);
                if (existed) assert_int_equal(unlink(p), 0);
                if (kind == 0) assert_int_equal(mkfifo(p, 0600), 0);
                if (kind == 1) assert_int_equal(mkdir(p, 0700), 0);
                if (kind == 2) assert_int_equal(symlink("other.qvr", p), 0);
                struct qv_error err;
                assert_int_equal(qv_sink_finish(&s, &err), EINVAL);
                assert_non_null(strstr(err.message, "swap.qvr"));
                assert_non_null(strstr(err.message, kind == 0   ? "is a FIFO"
                                                    : kind == 1 ? "is a directory"
                                                                : "is a symbolic link"));
                qv_sink_close(&s);
                assert_int_equal(open_fds(), fds);
                struct stat st;
                assert_int_equal(lstat(p, &st), 0);
                assert_true(kind == 0   ? S_ISFIFO(st.st_mode)
                            : kind == 1 ? S_ISDIR(st.st_mode)
                                        : S_ISLNK(st.st_mode));
                assert_int_equal(stat(other, &st), 0);
                assert_int_equal(st.st_size, 5);
                assert_int_equal(count_temporaries(dir), 0);
                assert_int_equal(kind == 1 ? rmdir(p) : unlink(p), 0);
            }
        }
    }
    qv_sink_force_temporary(0);
}

/* The directory renamed under an open sink: finish fails with ENOENT naming
 * the file; a new directory made at the old name receives the file. */
static void test_directory_renamed_under_sink(void **state) {
    (void)state;
    char sub[700], sub2[700], p[800];
    in_dir(sub, sizeof sub, "sub");
    in_dir(sub2, sizeof sub2, "sub2");
    assert_true(snprintf(p, sizeof p, "%s/x.bin", sub) < (int)sizeof p);
    FOR_MODES(mode) {
        for (int remake = 0; remake < 2; remake++) {
            qv_sink_force_temporary(mode);
            assert_int_equal(mkdir(sub, 0700), 0);
            struct qv_sink s;
            assert_int_equal(qv_sink_open_file(p, &s, NULL), 0);
            assert_int_equal(qv_sink_write(&s, "abc", 3, NULL), 0);
            assert_int_equal(rename(sub, sub2), 0);
            if (remake) assert_int_equal(mkdir(sub, 0700), 0);
            struct qv_error err;
            int rc = qv_sink_finish(&s, &err);
            qv_sink_close(&s);
            if (remake && mode != 1) {
                /* The unnamed file is linked into the new directory. */
                assert_int_equal(rc, 0);
                struct stat st;
                assert_int_equal(stat(p, &st), 0);
                assert_int_equal(st.st_size, 3);
            } else {
                assert_int_equal(rc, ENOENT);
                assert_non_null(strstr(err.message, "x.bin"));
                assert_false(exists("sub/x.bin"));
            }
            /* A named temporary moved with its directory stays there (as
             * one of a killed writer would); nothing else does. */
            assert_int_equal(count_entries(sub2), mode == 1 ? 1 : 0);
            char cmd[1600];
            snprintf(cmd, sizeof cmd, "rm -rf '%s' '%s'", sub, sub2);
            assert_int_equal(system(cmd), 0);
        }
    }
    qv_sink_force_temporary(0);
}

/* No descriptor left before finish (RLIMIT_NOFILE reached): linking and
 * renaming need none, so unnamed and named sinks finish; the copy needs
 * one and fails naming the file, then succeeds once one is free. A sink
 * opened at the limit fails cleanly. Runs in a child (the limit). */
static void test_fd_limit_before_finish(void **state) {
    (void)state;
    char p[700];
    in_dir(p, sizeof p, "nofile.bin");
    FOR_MODES(mode) {
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            qv_sink_force_temporary(mode);
            struct qv_sink s;
            if (qv_sink_open_file(p, &s, NULL) != 0) _exit(10);
            if (qv_sink_write(&s, "0123456789", 10, NULL) != 0) _exit(11);
            struct rlimit rl = {256, 256};
            if (setrlimit(RLIMIT_NOFILE, &rl) != 0) _exit(12);
            int filler[256], nf = 0;
            while (nf < 256 && (filler[nf] = dup(0)) >= 0) nf++;
            if (nf == 256) _exit(13);
            struct qv_error err;
            struct qv_sink s2;
            int rc2 = qv_sink_open_file(p, &s2, &err);
            if (rc2 == 0 || !strstr(err.message, "nofile.bin")) _exit(14);
            int rc = qv_sink_finish(&s, &err);
            if (mode != 2 && rc != 0) _exit(15);
            if (mode == 2) {
                if (rc == 0 || !strstr(err.message, "nofile.bin")) _exit(16);
                close(filler[--nf]);
                close(filler[--nf]);
                if (qv_sink_finish(&s, &err) != 0) _exit(17);
            }
            qv_sink_close(&s);
            while (nf > 0) close(filler[--nf]);
            struct stat st;
            if (stat(p, &st) != 0 || st.st_size != 10) _exit(18);
            _exit(0);
        }
        assert_int_equal(child_exit_code(pid), 0);
        assert_int_equal(count_entries(dir), 1);
        assert_int_equal(unlink(p), 0);
    }
}

/* ---- fork while a sink is open ---- */

/* A child forked while a sink is open exits without finishing, or discards
 * its copy of the sink (qv_sink_close, as a binding's destructor would):
 * the parent's sink still finishes with all its bytes. */
static void test_fork_with_open_sink(void **state) {
    (void)state;
    char p[700];
    in_dir(p, sizeof p, "forked.bin");
    FOR_MODES(mode) {
        for (int child_closes = 0; child_closes < 2; child_closes++) {
            for (int existed = 0; existed < 2; existed++) {
                qv_sink_force_temporary(mode);
                if (existed) put_file(p, "");
                struct qv_sink s;
                assert_int_equal(qv_sink_open_file(p, &s, NULL), 0);
                assert_int_equal(qv_sink_write(&s, "first,", 6, NULL), 0);
                pid_t pid = fork();
                assert_true(pid >= 0);
                if (pid == 0) {
                    if (child_closes) qv_sink_close(&s);
                    _exit(0);
                }
                assert_int_equal(child_exit_code(pid), 0);
                assert_int_equal(qv_sink_write(&s, "second", 6, NULL), 0);
                struct qv_error err;
                int rc = qv_sink_finish(&s, &err);
                if (rc) print_message("mode %d closes %d existed %d: %s\n", mode, child_closes,
                                      existed, err.message);
                assert_int_equal(rc, 0);
                qv_sink_close(&s);
                char buf[16] = {0};
                int fd = open(p, O_RDONLY);
                assert_true(fd >= 0);
                assert_int_equal(read(fd, buf, sizeof buf), 12);
                close(fd);
                assert_string_equal(buf, "first,second");
                assert_int_equal(count_entries(dir), 1);
                assert_int_equal(unlink(p), 0);
            }
        }
    }
    qv_sink_force_temporary(0);
}

/* A chain of dangling links, relative to each link's own directory, the
 * last absolute: the file it finally names is created, then replaced; the
 * links stay links. */
static void test_dangling_symlink_chain(void **state) {
    (void)state;
    char p[800], l1[700], final[700];
    assert_int_equal(mkdir(in_dir(p, sizeof p, "d1"), 0700), 0);
    assert_int_equal(mkdir(in_dir(p, sizeof p, "d2"), 0700), 0);
    assert_int_equal(mkdir(in_dir(p, sizeof p, "d3"), 0700), 0);
    in_dir(final, sizeof final, "d3/final.bin");
    assert_int_equal(symlink(final, in_dir(p, sizeof p, "d2/l3")), 0);
    assert_int_equal(symlink("../d2/l3", in_dir(p, sizeof p, "d1/l2")), 0);
    assert_int_equal(symlink("d1/l2", in_dir(l1, sizeof l1, "l1")), 0);
    FOR_MODES(mode) {
        for (int round = 0; round < 2; round++) {
            qv_sink_force_temporary(mode);
            size_t len = 1000 + (size_t)mode * 10 + (size_t)round;
            static unsigned char buf[2000];
            memset(buf, 'a' + round, len);
            struct qv_sink s;
            assert_int_equal(qv_sink_open_file(l1, &s, NULL), 0);
            assert_int_equal(qv_sink_write(&s, buf, len, NULL), 0);
            assert_int_equal(count_entries(in_dir(p, sizeof p, "d3")), round + (mode == 1));
            assert_int_equal(qv_sink_finish(&s, NULL), 0);
            qv_sink_close(&s);
            struct stat st;
            assert_int_equal(lstat(final, &st), 0);
            assert_true(S_ISREG(st.st_mode));
            assert_int_equal((size_t)st.st_size, len);
            assert_int_equal(lstat(l1, &st), 0);
            assert_true(S_ISLNK(st.st_mode));
            assert_int_equal(count_entries(in_dir(p, sizeof p, "d3")), 1);
        }
        assert_int_equal(unlink(final), 0);
    }
    qv_sink_force_temporary(0);
}

/* Entries in the directory of `path` (any length up to PATH_MAX). */
static int entries_beside(const char *path) {
    char d[PATH_MAX];
    snprintf(d, sizeof d, "%.*s", (int)(strrchr(path, '/') - path), path);
    DIR *dp = opendir(d);
    assert_non_null(dp);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(dp)) != NULL) n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    closedir(dp);
    return n;
}

/* Names near NAME_MAX: a base name of 250 bytes is created and replaced in
 * every mode (its temporary's name is cut to fit), a dead writer's
 * temporary of it is found; one longer than NAME_MAX is refused at open
 * with ENAMETOOLONG, before anything is written. */
static void test_long_names(void **state) {
    (void)state;
    char name[300], p[1000];
    memset(name, 'n', 250);
    name[250] = 0;
    assert_true(snprintf(p, sizeof p, "%s/%s", dir, name) < (int)sizeof p);
    FOR_MODES(mode) {
        for (int round = 0; round < 2; round++) {
            qv_sink_force_temporary(mode);
            char data[16];
            int len = snprintf(data, sizeof data, "m%d r%d", mode, round);
            struct qv_sink s;
            struct qv_error err;
            assert_int_equal(qv_sink_open_file(p, &s, &err), 0);
            assert_int_equal(qv_sink_write(&s, data, (size_t)len, NULL), 0);
            int rc = qv_sink_finish(&s, &err);
            if (rc) print_message("mode %d round %d: %s\n", mode, round, err.message);
            assert_int_equal(rc, 0);
            qv_sink_close(&s);
            char back[16] = {0};
            int fd = open(p, O_RDONLY);
            assert_true(fd >= 0);
            assert_int_equal(read(fd, back, sizeof back), len);
            close(fd);
            assert_string_equal(back, data);
            assert_int_equal(count_entries(dir), 1);
        }
    }
    /* A dead writer's temporary of the long name (base cut to 223 bytes). */
    char stale[300];
    assert_true(snprintf(stale, sizeof stale, "%.223s.tmp.%d.0", name, (int)dead_pid()) <
                (int)sizeof stale);
    touch(stale);
    qv_sink_force_temporary(1);
    struct qv_sink s;
    assert_int_equal(qv_sink_open_file(p, &s, NULL), 0);
    assert_false(exists(stale));
    assert_int_equal(qv_sink_finish(&s, NULL), 0);
    qv_sink_close(&s);
    qv_sink_force_temporary(0);
    assert_int_equal(count_entries(dir), 1);
    /* A path of 4094 bytes (PATH_MAX - 2): created, but its replacement
     * would need a longer temporary name: ENAMETOOLONG at open, the file
     * kept. */
    char deep[PATH_MAX];
    int at = snprintf(deep, sizeof deep, "%s", dir);
    while (PATH_MAX - 2 - (at + 1) > 200) {
        int left = PATH_MAX - 2 - (at + 1), len = left - 100 > 200 ? 200 : left - 100;
        deep[at++] = '/';
        memset(deep + at, 'd', (size_t)len);
        at += len;
        deep[at] = 0;
        assert_int_equal(mkdir(deep, 0700), 0);
    }
    deep[at++] = '/';
    memset(deep + at, 'f', (size_t)(PATH_MAX - 2 - at));
    deep[PATH_MAX - 2] = 0;
    assert_true(strlen(deep) - (size_t)(strrchr(deep, '/') - deep) <= 250);
    FOR_MODES(mode) {
        qv_sink_force_temporary(mode);
        struct qv_error err;
        int rc = qv_sink_open_file(deep, &s, &err);
        if (mode == 0) {
            /* New: linked at its name. */
            assert_int_equal(rc, 0);
            assert_int_equal(qv_sink_write(&s, "deep", 4, NULL), 0);
            assert_int_equal(qv_sink_finish(&s, NULL), 0);
            qv_sink_close(&s);
        } else {
            assert_int_equal(rc, ENAMETOOLONG);
            assert_non_null(strstr(err.message, "ddddd"));
        }
    }
    qv_sink_force_temporary(0);
    struct stat dst;
    assert_int_equal(stat(deep, &dst), 0);
    assert_int_equal(dst.st_size, 4);
    assert_int_equal(entries_beside(deep), 1);
    /* Longer than NAME_MAX: refused at open. */
    memset(name, 'o', 256);
    name[256] = 0;
    assert_true(snprintf(p, sizeof p, "%s/%s", dir, name) < (int)sizeof p);
    struct qv_error err;
    assert_int_equal(qv_sink_open_file(p, &s, &err), ENAMETOOLONG);
    assert_non_null(strstr(err.message, "ooooo"));
    assert_int_equal(count_entries(dir), 2) /* the long name and the deep tree */;
}

/* A directory the writer may not write to (checked as nobody when the test
 * runs as root, where permissions do not deny): EACCES naming the file,
 * at open, for a new file and for a replacement, nothing left; and a file
 * whose directory may not be searched. Runs in a child (setuid). */
static void test_read_only_directory(void **state) {
    (void)state;
    char ro[700], p[800], q[800];
    assert_int_equal(mkdir(in_dir(ro, sizeof ro, "ro"), 0755), 0);
    assert_true(snprintf(p, sizeof p, "%s/old.bin", ro) < (int)sizeof p);
    assert_true(snprintf(q, sizeof q, "%s/new.bin", ro) < (int)sizeof q);
    put_file(p, "");
    assert_int_equal(chmod(dir, 0711), 0);
    assert_int_equal(chmod(ro, 0555), 0);
    FOR_MODES(mode) {
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            qv_sink_force_temporary(mode);
            if (geteuid() == 0 && (setgid(65534) != 0 || setuid(65534) != 0)) _exit(10);
            if (access(ro, W_OK) == 0) _exit(11); /* permissions do not deny */
            const char *paths[2] = {q, p};
            for (int i = 0; i < 2; i++) {
                struct qv_sink s;
                struct qv_error err;
                int rc = qv_sink_open_file(paths[i], &s, &err);
                if (rc != EACCES) {
                    fprintf(stderr, "mode %d %s: %d %s\n", mode, paths[i], rc, rc ? err.message : "");
                    _exit(20 + i);
                }
                if (!strstr(err.message, i ? "old.bin" : "new.bin")) _exit(22);
            }
            _exit(0);
        }
        int code = child_exit_code(pid);
        if (code == 11) skip();
        assert_int_equal(code, 0);
        assert_int_equal(count_entries(ro), 1);
    }
    assert_int_equal(chmod(ro, 0700), 0);
    assert_int_equal(chmod(dir, 0700), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_truncate_during_scan, setup, teardown),
        cmocka_unit_test_setup_teardown(test_truncate_during_take, setup, teardown),
        cmocka_unit_test_setup_teardown(test_overwrite_during_scan, setup, teardown),
        cmocka_unit_test_setup_teardown(test_append_during_scan, setup, teardown),
        cmocka_unit_test_setup_teardown(test_mmap_option, setup, teardown),
        cmocka_unit_test_setup_teardown(test_column_reader_short_read, setup, teardown),
        cmocka_unit_test_setup_teardown(test_open_special_files, setup, teardown),
        cmocka_unit_test_setup_teardown(test_write_to_special_files, setup, teardown),
        cmocka_unit_test_setup_teardown(test_write_through_symlinks, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stale_temporaries_named, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stale_temporaries_unnamed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stale_temporaries_unnamed_new_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unnamed_temporaries, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unnamed_copy_fallback, setup, teardown),
        cmocka_unit_test_setup_teardown(test_disk_full_named, setup, teardown),
        cmocka_unit_test_setup_teardown(test_concurrent_writers_same_path, setup, teardown),
        cmocka_unit_test_setup_teardown(test_disk_full, setup, teardown),
        cmocka_unit_test_setup_teardown(test_file_size_limit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_destination_swapped_before_finish, setup, teardown),
        cmocka_unit_test_setup_teardown(test_directory_renamed_under_sink, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fd_limit_before_finish, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fork_with_open_sink, setup, teardown),
        cmocka_unit_test_setup_teardown(test_dangling_symlink_chain, setup, teardown),
        cmocka_unit_test_setup_teardown(test_long_names, setup, teardown),
        cmocka_unit_test_setup_teardown(test_read_only_directory, setup, teardown),
        cmocka_unit_test_setup_teardown(test_durability_unnamed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_durability_named, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
