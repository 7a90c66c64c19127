/* The plain reading of a comparison of struct qv_enc_pred, written once for
 * the tests that check the encoded-domain filters value by value. It is
 * the tests' own reference, deliberately independent of the library's
 * kernels (encoding/filter.c translates predicates into the encoded domain;
 * nothing here is shared with it). */
#ifndef QV_TEST_PRED_ORACLE_H
#define QV_TEST_PRED_ORACLE_H

#include <stdint.h>

#include "quiver/encoding.h"

/* Whether x satisfies p: signed kinds compare against lo (and hi for
 * BETWEEN), unsigned kinds against ulo (and uhi). Every op other than the
 * six comparisons is read as BETWEEN. */
#define PRED_ORACLE(NAME, T, LO, HI)                                                             \
    static inline int NAME(const struct qv_enc_pred *p, T x) {                                   \
        switch (p->op) {                                                                         \
        case QV_ENC_OP_EQ: return x == p->LO;                                                    \
        case QV_ENC_OP_NE: return x != p->LO;                                                    \
        case QV_ENC_OP_LT: return x < p->LO;                                                     \
        case QV_ENC_OP_LE: return x <= p->LO;                                                    \
        case QV_ENC_OP_GT: return x > p->LO;                                                     \
        case QV_ENC_OP_GE: return x >= p->LO;                                                    \
        default: return p->LO <= x && x <= p->HI;                                                \
        }                                                                                        \
    }
PRED_ORACLE(pred_oracle_i64, int64_t, lo, hi)
PRED_ORACLE(pred_oracle_u64, uint64_t, ulo, uhi)
#undef PRED_ORACLE

#endif
