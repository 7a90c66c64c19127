/* The scan fixture (scan_fixture.h) as the multi-threaded scan tests use
 * it: written once to a file in the test directory, its bytes also held in
 * memory (for sources that serve reads from them), with the pool and the
 * reservation the test charges everything to. */
#ifndef QV_TEST_FX_FILE_H
#define QV_TEST_FX_FILE_H

#include <stddef.h>
#include <stdint.h>

#include "quiver/memory.h"

struct fx_file {
    struct qv_pool *pool;
    struct qv_reservation *res;
    char path[512];
    uint8_t *bytes;
    size_t size;
};

/* Creates the pool and the reservation, writes `rows` rows of the fixture
 * in row groups of `rg_rows` to `name` in the test directory and reads the
 * file back into f->bytes. */
void fx_file_open(struct fx_file *f, const char *name, int64_t rows, int64_t rg_rows);
/* Removes the file and frees its bytes, destroys the reservation and
 * asserts the pool holds nothing reserved before destroying it. */
void fx_file_close(struct fx_file *f);
/* Asserts the pool has one reservation left: the test's own. */
void fx_file_pool_is_clean(const struct fx_file *f);

#endif
