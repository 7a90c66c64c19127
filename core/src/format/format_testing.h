/*
 * Test knobs of the format part. Not public, not exported from
 * libquiver.so; the C tests include this header through the core/src
 * include directory and link the static library.
 */
#ifndef QV_FORMAT_TESTING_H
#define QV_FORMAT_TESTING_H

#include "quiver/format.h"

/* Makes `encoding` (a QV_ENC_* value; QV_ENC_AUTO restores the cascade) the
 * top-level encoding of every values segment the writer writes from now on,
 * so a test can reach each encoding's write and read paths through whole
 * files. Validity and offsets segments keep the cascade's choice. A forced
 * encoding that cannot represent a column's values fails that row group's
 * write with the encoder's error. QV_ENC_RELATIVE is the exception: it
 * stores every top-level integer column relative to the nearest earlier one
 * of its kind that is not itself relative, and leaves the other columns to
 * the cascade (writer_relative.c). */
void qv_writer_force_encoding(struct qv_writer *w, int encoding);

/* Makes `mode` (an enum qv__fill_mode of format/null_fill.h; 0 = AUTO, the
 * default) what the writer stores under the null slots of values segments
 * from now on, so tests and benchmarks can compare fills. */
void qv_writer_force_null_fill(struct qv_writer *w, int mode);

/* Calls hook(ctx, row_group, column) on the encoding thread before each
 * top-level column of each row group is encoded; a nonzero return is an
 * injected failure with that errno (the writer fails as for a real one). A
 * hook may block, so that a test holds the worker mid-encode. */
void qv_writer_set_encode_hook(struct qv_writer *w, int (*hook)(void *ctx, int64_t row_group,
                                                                int32_t column),
                               void *ctx);
/* Nonzero once abort or close has asked the worker to stop (a blocking hook
 * polls it so that it lets the abort through). Safe from any thread. */
int qv_writer_cancel_requested(struct qv_writer *w);
/* Whether the writer has started its worker thread. */
int qv_writer_has_worker(const struct qv_writer *w);

/* How file sinks (qv_sink_open_file) make their temporary file from now on,
 * in the whole process: 0 chooses (an unnamed O_TMPFILE file where the file
 * system has them, else a named one), 1 forces a named one, 2 an unnamed
 * one whose naming at finish is taken to fail, so that its copy into a named
 * file runs. Also forgets that naming failed before. */
void qv_sink_force_temporary(int mode);
/* How many times file sinks of this process have listed a directory looking
 * for the temporary files of dead writers. */
long qv_sink_directory_scans(void);

#endif /* QV_FORMAT_TESTING_H */
