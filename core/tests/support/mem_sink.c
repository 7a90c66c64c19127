#include "mem_sink.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static int ms_write(void *ctx, const void *buf, size_t len, struct qv_error *err) {
    struct memsink *m = ctx;
    if (m->fail_at && ++m->writes == m->fail_at)
        return qv_error_set(err, EIO, "memsink: injected write failure");
    if (m->len + len > m->cap) {
        size_t cap = (m->len + len) * 2;
        uint8_t *p = realloc(m->p, cap);
        if (!p) return qv_error_set(err, ENOMEM, "memsink: out of memory");
        m->p = p;
        m->cap = cap;
    }
    memcpy(m->p + m->len, buf, len);
    m->len += len;
    return 0;
}

static int ms_finish(void *ctx, struct qv_error *err) {
    (void)err;
    ((struct memsink *)ctx)->finished = 1;
    return 0;
}

static void ms_abort(void *ctx) { ((struct memsink *)ctx)->aborted = 1; }

static void ms_close(void *ctx) { (void)ctx; }

struct qv_sink memsink_open(struct memsink *m, int fail_at) {
    m->len = 0;
    m->finished = m->aborted = m->writes = 0;
    m->fail_at = fail_at;
    struct qv_sink s = {.ctx = m, .name = "mem", .write = ms_write, .finish = ms_finish,
                        .abort = ms_abort, .close = ms_close};
    return s;
}
