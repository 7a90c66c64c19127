/* The old-format fixtures of core/tests/data/: what each file holds, in one
 * place, so that the program that wrote them (make_compat_fixtures.c) and
 * the test that reads them (test_format_compat.c) build the same rows. The
 * rows are a pure function of the specification below (fixed seeds and
 * formulas), so the test compares every value a file holds against rows it
 * regenerates, not against hashes of the reader's own output. */
#ifndef QV_TEST_COMPAT_FIXTURES_H
#define QV_TEST_COMPAT_FIXTURES_H

#include "quiver/format.h"

struct cf_spec {
    const char *file;      /* name under core/tests/data */
    int64_t rows, row_group_rows;
    int compact;
    int strings;           /* 1: the long-strings schema, 0: every type */
    uint64_t seed;
    const char *what;      /* one line for the README and messages */
};

extern const struct cf_spec cf_specs[];
extern const int cf_n_specs;

/* The schema of spec `s` (the caller destroys it). */
int cf_schema(const struct cf_spec *s, struct qv_reservation *r, struct qv_schema **out);
/* All rows of spec `s` as one STRUCT batch (the caller releases it). */
int cf_batch(const struct cf_spec *s, const struct qv_schema *schema, struct qv_reservation *r,
             struct ArrowArray *out);

#endif
