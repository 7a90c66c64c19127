/* Local-file implementations of the source and sink interfaces.
 *
 * Sources read with pread into the caller's buffers by default, so the
 * reader owns (and verifies) every byte it decodes; mapping is an opt-in
 * (qv_source_open_file_mapped). Neither ever opens a FIFO, socket or device
 * in a way that can block: the path is refused unless it is a regular file.
 *
 * Sinks write a temporary file (unnamed where the file system allows) and
 * give it its final name on finish, so a file visible under its final name
 * is always complete. They never replace what
 * is not a regular file, and they write through symlinks to the target. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "quiver/format.h"
#include "format/format_testing.h"
#include "format/reader_internal.h"

/* What a stat mode is, for messages. */
static const char *mode_kind(mode_t m) {
    if (S_ISREG(m)) return "a regular file";
    if (S_ISDIR(m)) return "a directory";
    if (S_ISFIFO(m)) return "a FIFO";
    if (S_ISSOCK(m)) return "a socket";
    if (S_ISCHR(m)) return "a character device";
    if (S_ISBLK(m)) return "a block device";
    if (S_ISLNK(m)) return "a symbolic link";
    return "not a regular file";
}

struct file_source {
    int fd;
    void *map;
    size_t map_size;
    char path[];
};

static int file_read_at(void *ctx, uint64_t offset, void *buf, size_t len, struct qv_error *err) {
    struct file_source *f = ctx;
    size_t done = 0;
    while (done < len) {
        ssize_t n = pread(f->fd, (char *)buf + done, len - done, (off_t)(offset + done));
        if (n < 0 && errno == EINTR) continue;
        if (n < 0)
            return qv_error_set(err, EIO, "file '%s': read of %zu bytes at offset %llu failed: %s",
                                f->path, len, (unsigned long long)offset, strerror(errno));
        if (n == 0)
            /* The file was shorter than when it was opened: truncated or
             * replaced in place by someone else. */
            return qv_error_set(err, EIO,
                                "file '%s': short read: %zu of %zu bytes at offset %llu "
                                "(the file was truncated after it was opened)",
                                f->path, done, len, (unsigned long long)offset);
        done += (size_t)n;
    }
    return 0;
}

static void file_source_close(void *ctx) {
    struct file_source *f = ctx;
    if (f->map) munmap(f->map, f->map_size);
    close(f->fd);
    free(f);
}

static int open_source(const char *path, int mapped, struct qv_source *out, struct qv_error *err) {
    memset(out, 0, sizeof *out);
    if (!path || !path[0]) return qv_error_set(err, EINVAL, "file '': empty path");
    /* Refuse special files before opening them: opening a FIFO for reading
     * blocks until a writer appears, and opening a device can have side
     * effects. */
    struct stat st;
    /* The system's errno is passed on (EACCES, ELOOP, ENAMETOOLONG, ...):
     * EIO would say the file is corrupt, and a binding maps codes to its
     * own errors (Python: PermissionError for EACCES). */
    if (stat(path, &st) != 0) {
        int e = errno;
        return qv_error_set(err, e == ENOTDIR ? ENOENT : e ? e : EIO,
                            "file '%s': cannot open: %s", path, strerror(e));
    }
    if (!S_ISREG(st.st_mode))
        return qv_error_set(err, EINVAL, "file '%s': is %s, not a regular file", path,
                            mode_kind(st.st_mode));
    /* The path may be swapped for a FIFO between stat and open: open
     * without blocking and check again on the descriptor. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0) {
        int e = errno;
        return qv_error_set(err, e ? e : EIO, "file '%s': cannot open: %s", path, strerror(e));
    }
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        int e = errno;
        close(fd);
        return qv_error_set(err, EINVAL, "file '%s': is %s, not a regular file", path,
                            S_ISREG(st.st_mode) ? strerror(e) : mode_kind(st.st_mode));
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0) fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    size_t plen = strlen(path);
    struct file_source *f = malloc(sizeof *f + plen + 1);
    if (!f) {
        close(fd);
        return qv_error_set(err, ENOMEM, "file '%s': out of memory opening", path);
    }
    f->fd = fd;
    f->map = NULL;
    f->map_size = 0;
    memcpy(f->path, path, plen + 1);
    if (mapped && st.st_size > 0 && (uint64_t)st.st_size <= SIZE_MAX) {
        void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (m != MAP_FAILED) {
            f->map = m;
            f->map_size = (size_t)st.st_size;
            out->base = m;
        }
    }
    out->ctx = f;
    out->name = f->path;
    out->size = (uint64_t)st.st_size;
    out->read_at = file_read_at;
    out->close = file_source_close;
    return 0;
}

int qv_source_open_file(const char *path, struct qv_source *out, struct qv_error *err) {
    return open_source(path, 0, out, err);
}

int qv_source_open_file_mapped(const char *path, struct qv_source *out, struct qv_error *err) {
    return open_source(path, 1, out, err);
}

struct mem_source {
    const unsigned char *data;
    uint64_t size;
    const char *name;
};

static int mem_read_at(void *ctx, uint64_t offset, void *buf, size_t len, struct qv_error *err) {
    struct mem_source *m = ctx;
    if (offset > m->size || len > m->size - offset)
        return qv_error_set(err, EIO, "'%s': read of %zu bytes at offset %llu past end (%llu)",
                            m->name, len, (unsigned long long)offset,
                            (unsigned long long)m->size);
    memcpy(buf, m->data + offset, len);
    return 0;
}

static void mem_close(void *ctx) { free(ctx); }

int qv_source_from_memory(const void *data, uint64_t size, const char *name,
                          struct qv_source *out, struct qv_error *err) {
    if (!out) return qv_error_set(err, EINVAL, "qv_source_from_memory: NULL output");
    memset(out, 0, sizeof *out);
    if (!data && size)
        return qv_error_set(err, EINVAL, "qv_source_from_memory: NULL data of %llu bytes",
                            (unsigned long long)size);
    struct mem_source *m = malloc(sizeof *m);
    if (!m)
        return qv_error_set(err, ENOMEM, "qv_source_from_memory: cannot allocate the source");
    *m = (struct mem_source){data, size, name ? name : "memory"};
    out->ctx = m;
    out->name = m->name;
    out->size = size;
    out->base = data;
    out->read_at = mem_read_at;
    out->close = mem_close;
    return 0;
}

void qv_source_close(struct qv_source *src) {
    if (src && src->close) src->close(src->ctx);
    if (src) memset(src, 0, sizeof *src);
}

int qv_source_read(const struct qv_source *src, uint64_t offset, void *buf, size_t len,
                   struct qv_error *err) {
    if (!src->read_at) return qv_error_set(err, EINVAL, "source is not open");
    if (offset > src->size || len > src->size - offset)
        return qv_error_set(err, EIO,
                            "file '%s': range of %zu bytes at offset %llu is past the end (%llu)",
                            src->name, len, (unsigned long long)offset,
                            (unsigned long long)src->size);
    int rc = src->read_at(src->ctx, offset, buf, len, err);
    if (rc && err) {
        /* A caller's source may fail without a message, or with one that
         * does not say which source it is: name it. */
        if (!err->message[0])
            qv_error_set(err, rc, "file '%.300s': read of %zu bytes at offset %llu failed (%s)",
                         src->name ? src->name : "", len, (unsigned long long)offset,
                         qv_errno_name(rc));
        else if (src->name && src->name[0] && !strstr(err->message, src->name))
            qv_error_wrap(err, rc, "file '%.300s': ", src->name);
    }
    return rc;
}

/* ---- sink ---- */

/* How sinks make their temporary file; see qv_sink_force_temporary in
 * format_testing.h. */
static _Atomic int temporary_mode;
/* Set once giving an unnamed file a name failed in this process (no /proc
 * and no CAP_DAC_READ_SEARCH): later sinks make named files from the start. */
static _Atomic int cannot_link;
static _Atomic long directory_scans;
static _Atomic unsigned temporary_counter;

void qv_sink_force_temporary(int mode) {
    temporary_mode = mode;
    cannot_link = 0;
}
long qv_sink_directory_scans(void) { return directory_scans; }

struct file_sink {
    int fd;
    int finished;     /* the file is under its final name */
    int named;        /* tmp_path exists on disk (abort removes it) */
    int durable;      /* finish fsyncs the file and its directory */
    pid_t owner;      /* the process that opened the sink: only it removes tmp_path */
    char *final_path; /* the path the caller gave, for messages */
    char *target;     /* what finish renames over: final_path with symlinks resolved */
    char tmp_path[];  /* the temporary's name once it has one */
};

/* The directory part of `path` ("." when it has none, "/" for "/x"). */
static void dir_of(const char *path, char *dir, size_t cap) {
    const char *slash = strrchr(path, '/');
    if (!slash) snprintf(dir, cap, ".");
    else if (slash == path) snprintf(dir, cap, "/");
    else snprintf(dir, cap, "%.*s", (int)(slash - path), path);
}

/* Errors of write, fsync and close on the temporary file. A full disk keeps
 * its errno (ENOSPC, EDQUOT, EFBIG) so front ends can map it; anything else
 * is EIO. */
static int sink_error(const struct file_sink *f, const char *op, int e, struct qv_error *err) {
    const char *why = e == ENOSPC ? "disk full"
                      : e == EDQUOT ? "disk quota exceeded"
                      : e == EFBIG ? "file too large for this file system or process limit"
                                   : NULL;
    char what[PATH_MAX + 64];
    if (f->named) {
        snprintf(what, sizeof what, "temporary file '%s'", f->tmp_path);
    } else {
        char dir[PATH_MAX];
        dir_of(f->target, dir, sizeof dir);
        snprintf(what, sizeof what, "unnamed temporary file in '%s'", dir);
    }
    if (why)
        return qv_error_set(err, e, "file '%s': %s: %s of %s failed: %s", f->final_path, why, op,
                            what, strerror(e));
    return qv_error_set(err, EIO, "file '%s': %s of %s failed: %s", f->final_path, op, what,
                        strerror(e));
}

static int write_all(int fd, const void *buf, size_t len) {
    size_t done = 0;
    while (done < len) {
        ssize_t n = write(fd, (const char *)buf + done, len - done);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return errno;
        done += (size_t)n;
    }
    return 0;
}

static int file_write(void *ctx, const void *buf, size_t len, struct qv_error *err) {
    struct file_sink *f = ctx;
    int e = write_all(f->fd, buf, len);
    if (e) {
        char op[64];
        snprintf(op, sizeof op, "write of %zu bytes", len);
        return sink_error(f, op, e, err);
    }
    return 0;
}

/* The code for a failure to create, link or rename in the destination's
 * directory: what a caller can act on keeps its errno (a missing directory,
 * a full disk, no permission or a read-only file system: Python maps
 * EACCES to PermissionError); anything else is EIO. */
static int dir_errno(int e) {
    return e == ENOENT || e == ENOSPC || e == EDQUOT || e == EACCES || e == EROFS ||
                   e == ENAMETOOLONG
               ? e
               : EIO;
}

/* Refuses a destination that exists and is not a regular file (checked with
 * lstat: `target` has its symlinks resolved already). */
static int check_destination(const char *shown, const char *target, struct qv_error *err) {
    struct stat st;
    if (lstat(target, &st) != 0) {
        /* Absent: it will be created. Anything else (a name longer than
         * NAME_MAX, a directory not searchable) is said at open, not after
         * all the data is written. */
        int e = errno;
        if (e == ENOENT) return 0;
        return qv_error_set(err,
                            e == ENOTDIR                                      ? ENOENT
                            : e == ENAMETOOLONG || e == EACCES || e == ELOOP ? e
                                                                              : EIO,
                            "file '%s': cannot create: %s", shown, strerror(e));
    }
    if (S_ISREG(st.st_mode)) return 0;
    if (strcmp(shown, target) != 0)
        return qv_error_set(err, EINVAL,
                            "file '%s': its target '%s' is %s; Quiver replaces only regular files",
                            shown, target, mode_kind(st.st_mode));
    return qv_error_set(err, EINVAL, "file '%s': is %s; Quiver replaces only regular files", shown,
                        mode_kind(st.st_mode));
}

/* Temporary names are `<base>.tmp.<pid>.<n>`, with the base cut to
 * TMP_BASE_MAX bytes where it is longer, so that the name stays within
 * NAME_MAX (".tmp." and two numbers of at most 10 digits: 26 bytes). A
 * destination whose name is near NAME_MAX can then be replaced, not only
 * created. */
#define TMP_BASE_MAX (NAME_MAX - 32)

/* The length of the target's base name that temporary names keep. */
static size_t tmp_base_len(const char *target, const char **base) {
    const char *slash = strrchr(target, '/');
    *base = slash ? slash + 1 : target;
    size_t blen = strlen(*base);
    return blen > TMP_BASE_MAX ? TMP_BASE_MAX : blen;
}

/* Sets f->tmp_path to the next temporary name of f->target. */
static void next_tmp_name(struct file_sink *f) {
    const char *base;
    size_t keep = (size_t)(tmp_base_len(f->target, &base) + (size_t)(base - f->target));
    snprintf(f->tmp_path, strlen(f->target) + 64, "%.*s.tmp.%ld.%u", (int)keep, f->target,
             (long)getpid(), atomic_fetch_add(&temporary_counter, 1));
}

/* Creates the named temporary `<target>.tmp.<pid>.<n>` (the next free n:
 * a name left by an earlier process with our pid can exist). */
static int create_named(struct file_sink *f, int *fd, struct qv_error *err) {
    int e = 0;
    for (int attempt = 0; attempt < 1000; attempt++) {
        next_tmp_name(f);
        *fd = open(f->tmp_path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOCTTY, 0644);
        e = errno;
        if (*fd >= 0 || e != EEXIST) break;
    }
    if (*fd >= 0) return 0;
    return qv_error_set(err, dir_errno(e),
                        "file '%s': cannot create temporary file '%s': %s", f->final_path,
                        f->tmp_path, strerror(e));
}

/* Gives the open unnamed file `fd` the name `path`: 0, EEXIST, or why the
 * system refused. linkat with AT_EMPTY_PATH needs CAP_DAC_READ_SEARCH; the
 * /proc/self/fd link works for anyone where /proc is mounted. */
static int link_fd(int fd, const char *path) {
    if (temporary_mode == 2) return EPERM;
    if (linkat(fd, "", AT_FDCWD, path, AT_EMPTY_PATH) == 0) return 0;
    if (errno == EEXIST) return EEXIST;
    char proc[64];
    snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
    if (linkat(AT_FDCWD, proc, AT_FDCWD, path, AT_SYMLINK_FOLLOW) == 0) return 0;
    return errno;
}

/* Where the unnamed file cannot be linked: copies it into a named
 * temporary, which then takes its place. */
static int copy_to_named(struct file_sink *f, struct qv_error *err) {
    int out;
    int rc = create_named(f, &out, err);
    if (rc) return rc;
    f->named = 1;
    (void)flock(out, LOCK_EX | LOCK_NB);
    char buf[1 << 16];
    int e = 0;
    for (off_t at = 0;;) {
        ssize_t n = pread(f->fd, buf, sizeof buf, at);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            e = n < 0 ? errno : 0;
            break;
        }
        if ((e = write_all(out, buf, (size_t)n)) != 0) break;
        at += n;
    }
    close(f->fd);
    f->fd = out;
    if (e) return sink_error(f, "copy of the unnamed file into", e, err);
    if (f->durable && fsync(out) != 0) return sink_error(f, "fsync", errno, err);
    return 0;
}

/* Names the unnamed temporary at finish: the destination itself when
 * nothing is there (one step: a writer killed at any point leaves nothing),
 * else a temporary name that finish renames over the destination. */
static int name_unnamed(struct file_sink *f, struct qv_error *err) {
    int rc = check_destination(f->final_path, f->target, err);
    if (rc) return rc;
    struct stat st;
    int e = 0;
    if (lstat(f->target, &st) != 0 && errno == ENOENT) {
        e = link_fd(f->fd, f->target);
        if (e == 0) {
            f->finished = 1;
            return 0;
        }
    }
    if (e == 0 || e == EEXIST) {
        for (int attempt = 0; attempt < 1000; attempt++) {
            next_tmp_name(f);
            e = link_fd(f->fd, f->tmp_path);
            if (e != EEXIST) break;
        }
        if (e == 0) {
            f->named = 1;
            return 0;
        }
    }
    /* Refused for want of /proc or of the capability, in a directory that
     * is still there: copy. Anything else (a full disk, a directory gone or
     * read-only) is the error it is. */
    char dir[PATH_MAX];
    dir_of(f->target, dir, sizeof dir);
    int dir_there = stat(dir, &st) == 0;
    if (dir_there ? !S_ISDIR(st.st_mode) : errno == ENOENT || errno == ENOTDIR)
        /* Whatever the link said (EPERM where it cannot be linked at all):
         * the directory was removed or renamed under the sink. */
        return qv_error_set(err, ENOENT,
                            "file '%s': cannot give the unnamed temporary file a name: "
                            "directory '%s' no longer exists",
                            f->final_path, dir);
    if ((e == ENOENT || e == EPERM || e == EOPNOTSUPP || e == EXDEV || e == EINVAL) && dir_there) {
        /* No /proc and no capability (ENOENT, EPERM) holds for the whole
         * process; the others may be this directory's alone. */
        if (e == ENOENT || e == EPERM) cannot_link = 1;
        return copy_to_named(f, err);
    }
    return qv_error_set(err, dir_errno(e),
                        "file '%s': cannot give the unnamed temporary file a name in '%s': %s",
                        f->final_path, dir, strerror(e));
}

static int file_finish(void *ctx, struct qv_error *err) {
    struct file_sink *f = ctx;
    if (f->durable && fsync(f->fd) != 0) return sink_error(f, "fsync", errno, err);
    if (!f->named) {
        int rc = name_unnamed(f, err);
        if (rc) return rc;
    }
    /* After a successful fsync, close cannot lose data on a local file
     * system; an unnamed file linked at its destination is committed. */
    if (close(f->fd) != 0 && !f->finished) {
        f->fd = -1;
        return sink_error(f, "close", errno, err);
    }
    f->fd = -1;
    if (!f->finished) {
        /* Checked at create; checked again because the write may have taken
         * long enough for someone to put a FIFO or a device there. */
        int rc = check_destination(f->final_path, f->target, err);
        if (rc) return rc;
        if (rename(f->tmp_path, f->target) != 0) {
            /* ENOENT: the directory was removed or renamed under the sink,
             * as where the unnamed file is linked. */
            int e = errno;
            return qv_error_set(err, dir_errno(e),
                                "file '%s': cannot rename temporary file '%s' to '%s': %s",
                                f->final_path, f->tmp_path, f->target, strerror(e));
        }
        f->finished = 1;
    }
    /* Make the rename (or link) itself durable. */
    if (!f->durable) return 0;
    char dir[PATH_MAX];
    dir_of(f->target, dir, sizeof dir);
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        fsync(dfd);
        close(dfd);
    }
    return 0;
}

static void file_abort(void *ctx) {
    struct file_sink *f = ctx;
    if (f->fd >= 0) {
        close(f->fd);
        f->fd = -1;
    }
    /* A child forked while the sink was open that discards its copy leaves
     * the parent's temporary alone: the parent still finishes it. */
    if (f->named && !f->finished && f->owner == getpid()) unlink(f->tmp_path);
}

static void file_sink_close(void *ctx) {
    struct file_sink *f = ctx;
    file_abort(f); /* closing an unfinished sink discards it */
    free(f->final_path);
    free(f->target);
    free(f);
}

/* Resolves symlinks in the last component of `path` (as many levels as the
 * system allows), so the temporary file is made next to the real target and
 * renamed over it: the link stays, the target is replaced atomically. A
 * dangling link resolves to the path it names. Sets *out (malloc'd). */
static int resolve_target(const char *path, char **out, struct qv_error *err) {
    char *cur = strdup(path);
    *out = NULL;
    if (!cur) return qv_error_set(err, ENOMEM, "file '%s': out of memory creating", path);
    for (int depth = 0;; depth++) {
        struct stat st;
        if (lstat(cur, &st) != 0 || !S_ISLNK(st.st_mode)) break;
        if (depth == 40) {
            free(cur);
            return qv_error_set(err, ELOOP, "file '%s': too many levels of symbolic links", path);
        }
        char link[PATH_MAX];
        ssize_t n = readlink(cur, link, sizeof link - 1);
        if (n < 0 || n == (ssize_t)sizeof link - 1) {
            int e = n < 0 ? errno : ENAMETOOLONG;
            qv_error_set(err, EIO, "file '%s': cannot read symbolic link '%s': %s", path, cur,
                         strerror(e));
            free(cur);
            return EIO;
        }
        link[n] = 0;
        char *next;
        if (link[0] == '/') {
            next = strdup(link);
        } else {
            /* Relative links are relative to the link's directory. */
            char dir[PATH_MAX];
            dir_of(cur, dir, sizeof dir);
            size_t len = strlen(dir) + 1 + (size_t)n + 1;
            next = malloc(len);
            if (next) snprintf(next, len, "%s/%s", dir, link);
        }
        free(cur);
        cur = next;
        if (!cur) return qv_error_set(err, ENOMEM, "file '%s': out of memory creating", path);
    }
    *out = cur;
    return 0;
}

/* Parses "<pid>.<n>" exactly (decimal digits only); the pid or 0. */
static long parse_tmp_suffix(const char *s) {
    long pid = 0;
    const char *p = s;
    if (*p < '1' || *p > '9') return 0;
    while (*p >= '0' && *p <= '9') {
        if (pid > (long)INT_MAX / 10) return 0;
        pid = pid * 10 + (*p++ - '0');
    }
    if (*p++ != '.') return 0;
    if (*p < '0' || *p > '9') return 0;
    while (*p >= '0' && *p <= '9') p++;
    return *p == 0 && pid <= INT_MAX ? pid : 0;
}

/* Removes temporary files `<base>.tmp.<pid>.<n>` left in the target's
 * directory by writers that died (SIGKILL, power loss of a process): only
 * names that match exactly, only regular files, only when the pid is not
 * alive on this machine and nobody holds the writer's lock on the file (a
 * live writer in another pid namespace or on another NFS client keeps it).
 * Best effort: any doubt leaves the file alone. */
static void remove_stale_temporaries(const char *target) {
    char dir[PATH_MAX];
    dir_of(target, dir, sizeof dir);
    const char *base;
    size_t blen = tmp_base_len(target, &base);
    DIR *d = opendir(dir);
    if (!d) return;
    directory_scans++;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        const char *name = e->d_name;
        if (strncmp(name, base, blen) != 0 || strncmp(name + blen, ".tmp.", 5) != 0) continue;
        long pid = parse_tmp_suffix(name + blen + 5);
        if (pid <= 0 || pid == (long)getpid()) continue;
        if (kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue;
        int fd = openat(dirfd(d), name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
        if (fd < 0) continue;
        struct stat st;
        if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && flock(fd, LOCK_EX | LOCK_NB) == 0)
            unlinkat(dirfd(d), name, 0);
        close(fd);
    }
    closedir(d);
}

int qv_sink_open_file(const char *path, struct qv_sink *out, struct qv_error *err) {
    return qv_sink_open_file_durability(path, QV_DURABLE, out, err);
}

int qv_sink_open_file_durability(const char *path, int durability, struct qv_sink *out,
                                 struct qv_error *err) {
    memset(out, 0, sizeof *out);
    if (!path || !path[0]) return qv_error_set(err, EINVAL, "file '': empty path");
    if (durability != QV_DURABLE && durability != QV_NOT_DURABLE)
        return qv_error_set(err, EINVAL, "file '%s': durability %d is neither %d nor %d", path,
                            durability, QV_DURABLE, QV_NOT_DURABLE);
    size_t plen = strlen(path);
    if (path[plen - 1] == '/')
        return qv_error_set(err, EINVAL, "file '%s': names a directory, not a file", path);
    char *target;
    int rc = resolve_target(path, &target, err);
    if (rc) return rc;
    size_t tlen = strlen(target);
    char dir[PATH_MAX];
    dir_of(target, dir, sizeof dir);
    struct stat st;
    if (target[tlen - 1] == '/') {
        rc = qv_error_set(err, EINVAL, "file '%s': its target '%s' names a directory", path, target);
    } else if (stat(dir, &st) != 0) {
        int e = errno;
        rc = qv_error_set(err, e == ENOENT || e == ENOTDIR ? ENOENT : EIO,
                          "file '%s': cannot create: directory '%s' %s", path, dir,
                          e == ENOENT ? "does not exist" : strerror(e));
    } else if (!S_ISDIR(st.st_mode)) {
        rc = qv_error_set(err, ENOTDIR, "file '%s': cannot create: '%s' is %s, not a directory",
                          path, dir, mode_kind(st.st_mode));
    } else {
        rc = check_destination(path, target, err);
    }
    if (rc) {
        free(target);
        return rc;
    }
    struct file_sink *f = malloc(sizeof *f + tlen + 64);
    char *final_path = strdup(path);
    if (!f || !final_path) {
        free(f);
        free(final_path);
        free(target);
        return qv_error_set(err, ENOMEM, "file '%s': out of memory creating", path);
    }
    f->final_path = final_path;
    f->target = target;
    f->finished = 0;
    f->durable = durability == QV_DURABLE;
    f->owner = getpid();
    f->tmp_path[0] = 0;
    /* An unnamed file (O_TMPFILE) where the file system has them: a writer
     * killed before finish leaves nothing, so only a replacement of an
     * existing file looks for what older or named writers left. Elsewhere
     * (NFS, most FUSE file systems) a named one, after the scan. */
    f->fd = -1;
    if (temporary_mode != 1 && !cannot_link)
        f->fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0644); /* read by a copy */
    f->named = f->fd < 0;
    int exists = lstat(target, &st) == 0;
    const char *base;
    size_t tmp_len = tmp_base_len(target, &base) + (size_t)(base - target) + 26;
    if (tmp_len >= PATH_MAX && (f->named || exists)) {
        /* A new file is linked at its own name; a replacement (or a named
         * temporary) needs a longer name the system would refuse after
         * all the data is written: say so now. */
        rc = qv_error_set(err, ENAMETOOLONG,
                          "file '%s': path too long (%zu bytes) for a temporary file next to it "
                          "(PATH_MAX %d)",
                          path, tlen, PATH_MAX);
    } else if (!f->named) {
        if (exists) remove_stale_temporaries(target);
    } else {
        remove_stale_temporaries(target);
        rc = create_named(f, &f->fd, err);
    }
    if (rc) {
        if (!f->named) close(f->fd);
        free(final_path);
        free(target);
        free(f);
        return rc;
    }
    /* Held until the file is closed: tells remove_stale_temporaries of other
     * processes that this writer is alive. */
    (void)flock(f->fd, LOCK_EX | LOCK_NB);
    out->ctx = f;
    out->name = f->final_path;
    out->write = file_write;
    out->finish = file_finish;
    out->abort = file_abort;
    out->close = file_sink_close;
    return 0;
}

int qv_sink_write(struct qv_sink *sink, const void *buf, size_t len, struct qv_error *err) {
    if (!sink->write) return qv_error_set(err, EINVAL, "sink is not open");
    int rc = sink->write(sink->ctx, buf, len, err);
    if (rc == 0) sink->position += len;
    return rc;
}

int qv_sink_finish(struct qv_sink *sink, struct qv_error *err) {
    return sink->finish(sink->ctx, err);
}

void qv_sink_abort(struct qv_sink *sink) {
    if (sink->abort) sink->abort(sink->ctx);
}

void qv_sink_close(struct qv_sink *sink) {
    if (sink && sink->close) sink->close(sink->ctx);
    if (sink) memset(sink, 0, sizeof *sink);
}

int qv__source_is_ours(const struct qv_source *src) {
    return src->base != NULL || src->read_at == file_read_at || src->read_at == mem_read_at;
}
