/* The C Data / C Stream life cycle: release and move helpers, owned arrays,
 * stream producers, and logical array equality. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "quiver/arrow.h"
#include "memory/memory_testing.h"

#define OK(x) assert_int_equal((x), 0)

struct env {
    struct qv_pool *pool;
    struct qv_reservation *res;
};

static int setup(void **state) {
    static struct env e;
    if (qv_pool_create(NULL, &e.pool, NULL) || qv_reservation_create(e.pool, NULL, &e.res, NULL))
        return -1;
    *state = &e;
    return 0;
}

static int teardown(void **state) {
    struct env *e = *state;
    uint64_t used = qv_reservation_used(e->res);
    qv_reservation_destroy(e->res);
    qv_pool_destroy(e->pool);
    return used == 0 ? 0 : -1;
}

/* ---- release / move ---- */

static int releases;
static void counting_release(struct ArrowArray *a) {
    releases++;
    a->release = NULL;
}
static void sloppy_release(struct ArrowSchema *s) { (void)s; releases++; } /* forgets to mark */

static void test_move_and_release(void **state) {
    (void)state;
    struct qv_error err = {0};
    struct ArrowArray a = {.length = 5, .release = counting_release}, b = {0};
    OK(qv_arrow_array_move(&b, &a, &err));
    assert_null(a.release);
    assert_int_equal(b.length, 5);
    /* Use after move. */
    assert_int_equal(qv_arrow_array_move(&b, &a, &err), EINVAL);
    assert_non_null(strstr(err.message, "released"));
    /* Moving onto a live struct would leak it. */
    struct ArrowArray c = {.release = counting_release};
    assert_int_equal(qv_arrow_array_move(&b, &c, &err), EINVAL);
    assert_non_null(strstr(err.message, "destination"));
    assert_non_null(c.release);
    OK(qv_arrow_array_move(&b, &b, &err)); /* onto itself: nothing happens */
    releases = 0;
    qv_arrow_array_release(&b);
    qv_arrow_array_release(&b);
    qv_arrow_array_release(&c);
    qv_arrow_array_release(NULL);
    assert_int_equal(releases, 2);

    /* A producer that forgets to mark its struct is still released once. */
    struct ArrowSchema s = {.release = sloppy_release}, t = {0};
    OK(qv_arrow_schema_move(&t, &s, &err));
    releases = 0;
    qv_arrow_schema_release(&t);
    qv_arrow_schema_release(&t);
    assert_int_equal(releases, 1);
    assert_int_equal(qv_arrow_schema_move(NULL, &s, &err), EINVAL);

    struct ArrowArrayStream st = {0}, su = {0};
    assert_int_equal(qv_arrow_stream_move(&su, &st, &err), EINVAL);
    qv_arrow_stream_release(&st);
    qv_arrow_stream_release(NULL);

    const uint8_t *z = qv_arrow_zero_buffer();
    assert_int_equal((uintptr_t)z % 64, 0);
    for (int i = 0; i < 64; i++) assert_int_equal(z[i], 0);
}

/* ---- owned arrays ---- */

static const struct qv_field o_kids[] = {{.name = "x", .type = QV_TYPE_INT32, .nullable = true},
                                         {.name = "s", .type = QV_TYPE_UTF8, .nullable = true}};
static const struct qv_field o_item[] = {{.name = "item", .type = QV_TYPE_STRUCT, .nullable = true, .n_children = 2, .children = o_kids}};
static const struct qv_field o_list = {.name = "l", .type = QV_TYPE_LIST, .nullable = true, .n_children = 1, .children = o_item};

static void test_owned_array(void **state) {
    struct env *e = *state;
    struct qv_error err = {0};
    struct ArrowArray a = {0};
    OK(qv_owned_array_create(&a, &o_list, e->res, &err));
    assert_int_equal(a.n_buffers, 2);
    assert_int_equal(a.n_children, 1);
    struct ArrowArray *st = a.children[0];
    assert_int_equal(st->n_buffers, 1);
    assert_int_equal(st->n_children, 2);
    assert_int_equal(st->children[1]->n_buffers, 3);
    assert_null(st->children[1]->buffers[2]);

    /* Fill it like a reader would: [[{1, "hi"}], null] */
    int32_t *lo = qv_owned_array_alloc_buffer(&a, 1, 3 * sizeof(int32_t), &err);
    assert_non_null(lo);
    lo[0] = 0, lo[1] = 1, lo[2] = 1;
    uint8_t *lv = qv_owned_array_alloc_buffer(&a, 0, 1, &err);
    lv[0] = 0x1;
    a.length = 2;
    a.null_count = 1;
    st->length = 1;
    struct ArrowArray *x = st->children[0], *s = st->children[1];
    int32_t *xv = qv_owned_array_alloc_buffer(x, 1, 4, &err);
    xv[0] = 1;
    x->length = 1;
    int32_t *so = qv_owned_array_alloc_buffer(s, 1, 8, &err);
    so[0] = 0, so[1] = 2;
    char *sd = qv_owned_array_alloc_buffer(s, 2, 2, &err);
    memcpy(sd, "hi", 2);
    s->length = 1;
    /* Replacing a buffer frees the old one; borrowing static data is fine. */
    uint64_t before = qv_reservation_used(e->res);
    assert_non_null(qv_owned_array_alloc_buffer(x, 0, 1000, &err));
    assert_true(qv_reservation_used(e->res) > before);
    OK(qv_owned_array_set_buffer(x, 0, NULL, 0, &err));
    assert_int_equal(qv_reservation_used(e->res), before);
    OK(qv_owned_array_set_buffer(st, 0, (void *)qv_arrow_zero_buffer(), 0, &err));
    OK(qv_owned_array_set_buffer(st, 0, NULL, 0, &err));
    OK(qv_arrow_array_validate(&a, &o_list, QV_VALIDATE_FULL, &err));

    /* Errors: bad index, a foreign array, a released one. */
    assert_null(qv_owned_array_alloc_buffer(&a, 2, 8, &err));
    assert_non_null(strstr(err.message, "index"));
    struct ArrowArray foreign = {.n_buffers = 2, .release = counting_release};
    assert_int_equal(qv_owned_array_set_buffer(&foreign, 0, NULL, 0, &err), EINVAL);
    assert_non_null(strstr(err.message, "not an owned array"));

    /* Move the struct child out; release the list first, then the child. */
    struct ArrowArray child = {0};
    OK(qv_arrow_array_move(&child, st, &err));
    qv_arrow_array_release(&a);
    assert_null(a.release);
    assert_int_equal(qv_owned_array_alloc_buffer(&a, 0, 8, &err), NULL);
    assert_non_null(strstr(err.message, "released"));
    OK(qv_arrow_array_validate(&child, &o_item[0], QV_VALIDATE_FULL, &err));
    assert_memory_equal(child.children[1]->buffers[2], "hi", 2);
    assert_true(qv_reservation_used(e->res) > 0);
    qv_arrow_array_release(&child);
    assert_int_equal(qv_reservation_used(e->res), 0);

    /* Allocation failure: nothing created, nothing held. */
    qv_pool_inject_alloc_failure(e->pool, 1);
    assert_int_equal(qv_owned_array_create(&a, &o_list, e->res, &err), ENOMEM);
    assert_null(a.release);
    OK(qv_owned_array_create(&a, &o_list, e->res, &err));
    qv_pool_inject_alloc_failure(e->pool, 1);
    assert_null(qv_owned_array_alloc_buffer(&a, 1, 64, &err));
    assert_int_equal(err.code, ENOMEM);
    qv_arrow_array_release(&a);
    struct qv_field bad = {.type = QV_TYPE_LIST};
    assert_int_equal(qv_owned_array_create(&a, &bad, e->res, &err), EINVAL);
}

/* ---- streams ---- */

static const struct qv_field i_col[] = {{.name = "v", .type = QV_TYPE_INT64}};
static const struct qv_field i_root = {.type = QV_TYPE_STRUCT, .n_children = 1, .children = i_col};

struct producer {
    struct qv_reservation *res;
    struct qv_schema *schema;
    int next, fail_at, released;
};

static int p_schema(void *ctx, struct ArrowSchema *out, struct qv_error *err) {
    struct producer *p = ctx;
    return qv_schema_export(p->schema, p->res, out, err);
}

static int p_next(void *ctx, struct ArrowArray *out, struct qv_error *err) {
    struct producer *p = ctx;
    if (p->next == p->fail_at) return qv_error_set(err, EIO, "producer: batch %d is corrupt", p->next);
    if (p->next == 3) return 0;
    int rc = qv_owned_array_create(out, &i_root, p->res, err);
    if (rc) return rc;
    int64_t *v = qv_owned_array_alloc_buffer(out->children[0], 1, 8, err);
    if (!v) {
        qv_arrow_array_release(out);
        return ENOMEM;
    }
    *v = p->next++;
    out->length = out->children[0]->length = 1;
    return 0;
}

static void p_release(void *ctx) { ((struct producer *)ctx)->released++; }

static void test_stream_wrapper(void **state) {
    struct env *e = *state;
    struct qv_error err = {0};
    struct producer p = {.res = e->res, .fail_at = 99};
    OK(qv_schema_create(&i_root, e->res, &p.schema, &err));
    static const struct qv_arrow_stream_ops ops = {p_schema, p_next, p_release};
    struct ArrowArrayStream s = {0};
    OK(qv_arrow_stream_create(&s, &ops, &p, e->res, &err));
    struct ArrowSchema cs = {0};
    OK(s.get_schema(&s, &cs));
    assert_string_equal(cs.format, "+s");
    qv_arrow_schema_release(&cs);
    struct ArrowArray got[3] = {{0}};
    OK(s.get_next(&s, &got[0]));
    OK(s.get_next(&s, &got[1]));
    assert_null(s.get_last_error(&s));
    p.fail_at = 2;
    struct ArrowArray bad = {.release = counting_release};
    assert_int_equal(s.get_next(&s, &bad), EIO);
    assert_null(bad.release);
    assert_non_null(strstr(s.get_last_error(&s), "batch 2 is corrupt"));
    p.fail_at = 99;
    OK(s.get_next(&s, &got[2]));
    assert_null(s.get_last_error(&s));
    struct ArrowArray end = {0};
    OK(s.get_next(&s, &end));
    assert_null(end.release);

    /* Release the stream; the batches stay valid. Calls through saved
     * callbacks on the released stream are refused. */
    int (*next)(struct ArrowArrayStream *, struct ArrowArray *) = s.get_next;
    qv_arrow_stream_release(&s);
    assert_int_equal(p.released, 1);
    assert_int_equal(next(&s, &end), EINVAL);
    qv_arrow_stream_release(&s);
    assert_int_equal(p.released, 1);
    for (int i = 0; i < 3; i++) {
        OK(qv_arrow_array_validate(&got[i], &i_root, QV_VALIDATE_FULL, &err));
        assert_int_equal(((const int64_t *)got[i].children[0]->buffers[1])[0], i);
        qv_arrow_array_release(&got[i]);
    }

    /* Creation failure: ctx stays the caller's. */
    qv_pool_inject_alloc_failure(e->pool, 1);
    assert_int_equal(qv_arrow_stream_create(&s, &ops, &p, e->res, &err), ENOMEM);
    assert_null(s.release);
    assert_int_equal(p.released, 1);
    assert_int_equal(qv_arrow_stream_create(&s, NULL, &p, e->res, &err), EINVAL);
    qv_schema_destroy(p.schema);
}

static void test_stream_from_batches_rejects(void **state) {
    struct env *e = *state;
    struct qv_error err = {0};
    struct qv_schema *schema;
    OK(qv_schema_create(&i_root, e->res, &schema, &err));
    struct ArrowSchema cs = {0};
    OK(qv_schema_export(schema, e->res, &cs, &err));
    struct ArrowArray b[2] = {{0}};
    OK(qv_owned_array_create(&b[0], &i_root, e->res, &err));
    OK(qv_owned_array_create(&b[1], &i_root, e->res, &err));
    b[1].n_children = 0; /* wrong shape */
    struct ArrowArrayStream s = {0};
    assert_int_equal(qv_arrow_stream_from_batches(&s, &cs, b, 2, e->res, &err), EINVAL);
    assert_non_null(strstr(err.message, "batch 1"));
    assert_null(s.release);
    assert_non_null(cs.release); /* nothing moved */
    assert_non_null(b[0].release);
    b[1].n_children = 1;
    /* Zero batches: a valid, empty stream. */
    OK(qv_arrow_stream_from_batches(&s, &cs, NULL, 0, e->res, &err));
    assert_null(cs.release);
    struct ArrowArray end = {0};
    OK(s.get_next(&s, &end));
    assert_null(end.release);
    struct ArrowSchema back = {0};
    OK(s.get_schema(&s, &back));
    qv_arrow_schema_release(&back);
    /* Releasing a stream with batches still inside frees them. */
    struct ArrowArrayStream s2 = {0};
    OK(qv_schema_export(schema, e->res, &cs, &err));
    OK(qv_arrow_stream_from_batches(&s2, &cs, b, 2, e->res, &err));
    qv_arrow_stream_release(&s2);
    qv_arrow_stream_release(&s);
    qv_schema_destroy(schema);
}

/* ---- equality ---- */

static const struct qv_field eq_cols[] = {
    {.name = "f", .type = QV_TYPE_FLOAT64, .nullable = true},
    {.name = "s", .type = QV_TYPE_UTF8, .nullable = true},
};
static const struct qv_field eq_root = {.type = QV_TYPE_STRUCT, .n_children = 2, .children = eq_cols};

static void make(struct env *e, struct ArrowArray *out, double f0, const char *s1, bool null1) {
    struct qv_schema *schema;
    struct qv_builder *b;
    OK(qv_schema_create(&eq_root, e->res, &schema, NULL));
    OK(qv_builder_create(schema, e->res, NULL, &b, NULL));
    OK(qv_append_float64(qv_builder_column(b, 0), f0));
    OK(qv_append_string(qv_builder_column(b, 1), "a", 1));
    if (null1) {
        OK(qv_append_null(qv_builder_column(b, 0)));
        OK(qv_append_null(qv_builder_column(b, 1)));
    } else {
        OK(qv_append_float64(qv_builder_column(b, 0), 1.5));
        OK(qv_append_string(qv_builder_column(b, 1), s1, strlen(s1)));
    }
    OK(qv_builder_finish(b, out, NULL));
    qv_builder_destroy(b);
    qv_schema_destroy(schema);
}

static void test_equal(void **state) {
    struct env *e = *state;
    struct ArrowArray a, b;
    char why[256];
    make(e, &a, NAN, "xyz", false);
    make(e, &b, NAN, "xyz", false);
    assert_true(qv_arrow_array_equal(&eq_root, &a, &b, why, sizeof why)); /* NaN == NaN by bits */
    qv_arrow_array_release(&b);
    make(e, &b, NAN, "xyw", false);
    assert_false(qv_arrow_array_equal(&eq_root, &a, &b, why, sizeof why));
    assert_non_null(strstr(why, "field 's' index 1"));
    qv_arrow_array_release(&b);
    make(e, &b, NAN, "xyz", true);
    assert_false(qv_arrow_array_equal(&eq_root, &a, &b, why, sizeof why));
    assert_non_null(strstr(why, "validity"));
    qv_arrow_array_release(&b);
    qv_arrow_array_release(&a);
    make(e, &a, 0.0, "", false);
    make(e, &b, -0.0, "", false);
    assert_false(qv_arrow_array_equal(&eq_root, &a, &b, why, sizeof why)); /* sign of zero kept */
    assert_non_null(strstr(why, "field 'f' index 0"));
    qv_arrow_array_release(&b);
    /* Values under nulls do not matter. */
    make(e, &b, 0.0, "", true);
    struct ArrowArray c;
    make(e, &c, 0.0, "", true);
    ((double *)b.children[0]->buffers[1])[1] = 42.0;
    assert_true(qv_arrow_array_equal(&eq_root, &b, &c, why, sizeof why));
    /* Offsets are honoured: row 1 of a vs a view of a at row 1. */
    struct ArrowArray v = a;
    v.offset = 1;
    v.length = 1;
    assert_false(qv_arrow_array_equal(&eq_root, &a, &v, why, sizeof why));
    assert_non_null(strstr(why, "lengths"));
    qv_arrow_array_release(&a);
    qv_arrow_array_release(&b);
    qv_arrow_array_release(&c);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_move_and_release),
        cmocka_unit_test_setup_teardown(test_owned_array, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stream_wrapper, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stream_from_batches_rejects, setup, teardown),
        cmocka_unit_test_setup_teardown(test_equal, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
