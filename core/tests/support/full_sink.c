#include "full_sink.h"

#include <errno.h>
#include <string.h>

static int full_write(void *ctx, const void *buf, size_t len, struct qv_error *err) {
    (void)buf;
    struct full_sink *f = ctx;
    if (f->written + len > f->room)
        return qv_error_set(err, ENOSPC, "sink 'full': no space left on device");
    f->written += len;
    return 0;
}

static int full_finish(void *ctx, struct qv_error *err) {
    (void)ctx;
    (void)err;
    return 0;
}

static void full_abort(void *ctx) { (void)ctx; }
static void full_close(void *ctx) { (void)ctx; }

void full_sink_init(struct full_sink *f, uint64_t room, struct qv_sink *out) {
    f->room = room;
    f->written = 0;
    memset(out, 0, sizeof *out);
    out->ctx = f;
    out->name = "full";
    out->write = full_write;
    out->finish = full_finish;
    out->abort = full_abort;
    out->close = full_close;
}
