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
 * write with the encoder's error. */
void qv_writer_force_encoding(struct qv_writer *w, int encoding);

#endif /* QV_FORMAT_TESTING_H */
