/* libFuzzer target: arbitrary bytes as a .qvr file. The reader must open it
 * or refuse it cleanly, and decode every row group (whole, and a take of a
 * few rows) or fail cleanly, under a memory limit, without a sanitizer
 * report. */
#include <stddef.h>
#include <stdint.h>

#include "quiver/format.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    struct qv_pool *pool;
    struct qv_pool_options po = {.name = "fuzz", .limit = 256u << 20};
    if (qv_pool_create(&po, &pool, NULL)) return 0;
    struct qv_reservation *r;
    if (qv_reservation_create(pool, NULL, &r, NULL)) {
        qv_pool_destroy(pool);
        return 0;
    }
    struct qv_source src;
    if (qv_source_from_memory(data, size, "fuzz.qvr", &src, NULL)) {
        qv_reservation_destroy(r);
        qv_pool_destroy(pool);
        return 0;
    }
    struct qv_reader *rd;
    struct qv_reader_options ro = {.skip_checksums = (size & 1) != 0};
    if (qv_reader_open_source(&src, &ro, r, &rd, NULL) == 0) {
        int64_t groups = qv_reader_num_row_groups(rd);
        for (int64_t g = 0; g < groups && g < 8; g++) {
            struct ArrowArray a;
            if (qv_reader_read_row_group(rd, g, NULL, 0, r, &a, NULL) == 0) a.release(&a);
            int64_t rows = qv_reader_row_group_rows(rd, g);
            struct qv_column_reader *cr;
            if (rows > 2 && qv_column_reader_open(rd, g, 0, r, &cr, NULL) == 0) {
                int64_t take[2] = {1, rows - 1};
                if (qv_column_reader_take(cr, take, 2, &a, NULL) == 0) a.release(&a);
                qv_column_reader_close(cr);
            }
        }
        qv_reader_close(rd);
    }
    qv_reservation_destroy(r);
    qv_pool_destroy(pool);
    return 0;
}
