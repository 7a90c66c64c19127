/* Local-file implementations of the source and sink interfaces. Writers go
 * through a temporary name and rename on finish, so a file visible under its
 * final name is always complete. */
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "quiver/format.h"

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
            return qv_error_set(err, EIO,
                                "file '%s': unexpected end of file reading %zu bytes at offset %llu",
                                f->path, len, (unsigned long long)offset);
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

int qv_source_open_file(const char *path, struct qv_source *out, struct qv_error *err) {
    memset(out, 0, sizeof *out);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return qv_error_set(err, errno == ENOENT ? ENOENT : EIO, "file '%s': cannot open: %s",
                            path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return qv_error_set(err, EIO, "file '%s': not a regular file", path);
    }
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
    if (st.st_size > 0 && (uint64_t)st.st_size <= SIZE_MAX) {
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

void qv_source_from_memory(const void *data, uint64_t size, const char *name,
                           struct qv_source *out) {
    memset(out, 0, sizeof *out);
    struct mem_source *m = malloc(sizeof *m);
    if (!m) return; /* read_at stays NULL: qv_source_read reports it */
    *m = (struct mem_source){data, size, name ? name : "memory"};
    out->ctx = m;
    out->name = m->name;
    out->size = size;
    out->base = data;
    out->read_at = mem_read_at;
    out->close = mem_close;
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
    return src->read_at(src->ctx, offset, buf, len, err);
}

/* ---- sink ---- */

struct file_sink {
    int fd;
    int finished;
    char *final_path;
    char tmp_path[];
};

static int file_write(void *ctx, const void *buf, size_t len, struct qv_error *err) {
    struct file_sink *f = ctx;
    size_t done = 0;
    while (done < len) {
        ssize_t n = write(f->fd, (const char *)buf + done, len - done);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0)
            return qv_error_set(err, errno == ENOSPC ? ENOSPC : EIO,
                                "file '%s': write of %zu bytes failed: %s", f->final_path, len,
                                strerror(errno));
        done += (size_t)n;
    }
    return 0;
}

static int file_finish(void *ctx, struct qv_error *err) {
    struct file_sink *f = ctx;
    if (fsync(f->fd) != 0)
        return qv_error_set(err, EIO, "file '%s': fsync failed: %s", f->final_path, strerror(errno));
    if (close(f->fd) != 0) {
        f->fd = -1;
        return qv_error_set(err, EIO, "file '%s': close failed: %s", f->final_path, strerror(errno));
    }
    f->fd = -1;
    if (rename(f->tmp_path, f->final_path) != 0)
        return qv_error_set(err, EIO, "file '%s': cannot rename from '%s': %s", f->final_path,
                            f->tmp_path, strerror(errno));
    f->finished = 1;
    /* Make the rename itself durable. */
    char *slash = strrchr(f->final_path, '/');
    char dir[4096];
    if (slash) snprintf(dir, sizeof dir, "%.*s", (int)(slash - f->final_path), f->final_path);
    else snprintf(dir, sizeof dir, ".");
    int dfd = open(dir[0] ? dir : "/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
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
    if (!f->finished) unlink(f->tmp_path);
}

static void file_sink_close(void *ctx) {
    struct file_sink *f = ctx;
    file_abort(f); /* closing an unfinished sink discards it */
    free(f->final_path);
    free(f);
}

int qv_sink_create_file(const char *path, struct qv_sink *out, struct qv_error *err) {
    static _Atomic unsigned counter;
    memset(out, 0, sizeof *out);
    size_t plen = strlen(path);
    struct file_sink *f = malloc(sizeof *f + plen + 64);
    char *final_path = malloc(plen + 1);
    if (!f || !final_path) {
        free(f);
        free(final_path);
        return qv_error_set(err, ENOMEM, "file '%s': out of memory creating", path);
    }
    memcpy(final_path, path, plen + 1);
    snprintf(f->tmp_path, plen + 64, "%s.tmp.%ld.%u", path, (long)getpid(),
             atomic_fetch_add(&counter, 1));
    f->final_path = final_path;
    f->finished = 0;
    f->fd = open(f->tmp_path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (f->fd < 0) {
        int e = errno;
        free(final_path);
        free(f);
        return qv_error_set(err, e == ENOENT ? ENOENT : EIO, "file '%s': cannot create: %s", path,
                            strerror(e));
    }
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
