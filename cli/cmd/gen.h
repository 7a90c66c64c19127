/* Writing generated lineitem data to a .qvr file: shared by `qv gen` and
 * `qv demo`. */
#ifndef QV_CLI_GEN_H
#define QV_CLI_GEN_H

#include <stdint.h>

#include "quiver/arrow.h"
#include "quiver/base.h"
#include "quiver/encoding.h"
#include "quiver/format.h"
#include "quiver/memory.h"

struct cli_gen_options {
    double sf;
    const char *path;
    int64_t row_group_rows; /* 0: the writer's default */
    /* Cut a row group early once the writer holds this many bytes (0: the
     * writer's default); set from --memory-limit so a budget smaller than
     * a full row group still writes, in smaller row groups. */
    uint64_t row_group_bytes;
    int compact;            /* let zstd / lz4 win where smaller */
    int random_access;      /* no frame encodings (qv_writer_options) */
    int progress;           /* progress bar on a TTY */
};

struct cli_gen_result {
    int64_t rows, orders;
    uint64_t file_bytes;
    uint64_t ns; /* wall time of generating + encoding + writing */
};

/* Generates lineitem at o->sf into o->path (through a temporary name;
 * nothing is left on failure). Everything is charged to `r`. */
int cli_gen_lineitem_file(const struct cli_gen_options *o, struct qv_reservation *r,
                          struct cli_gen_result *res, struct qv_error *err);

#endif
