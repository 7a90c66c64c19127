/* Schemas: Arrow format strings, the owned tree (create, copy, equality,
 * printing), ArrowSchema import and export, errors naming field paths, and
 * allocation failures. */
#include "test_builder_gen.h"

#include "quiver/memory.h"
#include "memory/memory_testing.h"

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
    return used == 0 ? 0 : -1; /* a leak fails the test */
}

/* ---- format strings ---- */

static void test_format_roundtrip(void **state) {
    (void)state;
    static const char *const formats[] = {
        "n", "b", "c", "C", "s", "S", "i", "I", "l", "L", "e", "f", "g", "u", "U", "z", "Z",
        "w:16", "w:0", "w:2147483647", "d:38,10", "d:1,0", "d:5,-2", "d:18,18", "tdD", "tss:",
        "tsm:Europe/Paris", "tsu:UTC", "tsn:", "tsn:+07:30", "+s", "+l", "+L", "+w:3", "+w:0", "+m"};
    for (size_t i = 0; i < sizeof formats / sizeof formats[0]; i++) {
        struct qv_field f = {0};
        struct qv_error err = {0};
        if (qv_arrow_format_parse(formats[i], &f, &err)) fail_msg("%s: %s", formats[i], err.message);
        char buf[64];
        size_t n = qv_arrow_format_emit(&f, buf, sizeof buf);
        assert_int_equal(n, strlen(formats[i]));
        assert_string_equal(buf, formats[i]);
        assert_int_equal(qv_arrow_format_emit(&f, NULL, 0), n); /* sizing pass */
    }
    struct qv_field f = {0};
    assert_int_equal(qv_arrow_format_parse("d:10,2,128", &f, NULL), 0);
    assert_int_equal(f.type, QV_TYPE_DECIMAL128);
    assert_int_equal(f.precision, 10);
    assert_int_equal(f.scale, 2);
    char buf[16];
    qv_arrow_format_emit(&f, buf, sizeof buf);
    assert_string_equal(buf, "d:10,2");
    assert_int_equal(qv_arrow_format_parse("tsu:UTC", &f, NULL), 0);
    assert_int_equal(f.unit, QV_TIME_US);
    assert_string_equal(f.timezone, "UTC");
    assert_int_equal(qv_arrow_format_parse("tss:", &f, NULL), 0);
    assert_null(f.timezone);
}

static void test_format_errors(void **state) {
    (void)state;
    static const struct {
        const char *format;
        int code;
    } cases[] = {
        {"", EINVAL},         {"x", EINVAL},          {"ii", EINVAL},        {"w:", EINVAL},
        {"w:-1", EINVAL},     {"w:1x", EINVAL},       {"w:+1", EINVAL},      {"w:99999999999", EINVAL},
        {"d:", EINVAL},       {"d:39,1", EINVAL},     {"d:0,0", EINVAL},     {"d:10", EINVAL},
        {"d:10,", EINVAL},    {"d:10,2,", EINVAL},    {"d:10,2,100", EINVAL}, {"d:10,2,128x", EINVAL},
        {"d:10,2,256", ENOSYS}, {"d:10,2,64", ENOSYS}, {"t", EINVAL},        {"ts", EINVAL},
        {"tsx:", EINVAL},     {"tsu", EINVAL},        {"tdD ", EINVAL},      {"+", EINVAL},
        {"+x", EINVAL},       {"+w:", EINVAL},        {"+w:-3", EINVAL},     {"+ss", EINVAL},
        {"tdm", ENOSYS},      {"ttu", ENOSYS},        {"tDs", ENOSYS},       {"tiM", ENOSYS},
        {"vu", ENOSYS},       {"vz", ENOSYS},         {"+vl", ENOSYS},       {"+r", ENOSYS},
        {"+ud:1,2", ENOSYS},  {"+us:0", ENOSYS},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct qv_field f = {0};
        struct qv_error err = {0};
        int rc = qv_arrow_format_parse(cases[i].format, &f, &err);
        if (rc != cases[i].code)
            fail_msg("'%s': got %s, want %s", cases[i].format, qv_errno_name(rc),
                     qv_errno_name(cases[i].code));
        assert_non_null(strstr(err.message, "format"));
    }
    assert_int_equal(qv_arrow_format_parse(NULL, &(struct qv_field){0}, NULL), EINVAL);
}

/* ---- export / import ---- */

static void test_export_import_all_types(void **state) {
    struct env *e = *state;
    struct qv_error err = {0};
    struct qv_schema *s;
    assert_int_equal(qv_schema_create(&gen_root, e->res, &s, &err), 0);
    struct ArrowSchema cs = {0};
    assert_int_equal(qv_schema_export(s, e->res, &cs, &err), 0);

    /* The exported tree, exactly per the spec. */
    assert_string_equal(cs.format, "+s");
    assert_string_equal(cs.name, "");
    assert_int_equal(cs.flags, 0);
    assert_int_equal(cs.n_children, gen_root.n_children);
    assert_null(cs.dictionary);
    static const struct {
        const char *name, *format;
        int64_t flags;
    } want[] = {
        {"b", "b", ARROW_FLAG_NULLABLE},         {"i64", "l", ARROW_FLAG_NULLABLE},
        {"f16", "e", ARROW_FLAG_NULLABLE},       {"dec9", "d:9,2", ARROW_FLAG_NULLABLE},
        {"dec38", "d:38,10", ARROW_FLAG_NULLABLE}, {"date", "tdD", ARROW_FLAG_NULLABLE},
        {"ts_s", "tss:", ARROW_FLAG_NULLABLE},   {"ts_ms", "tsm:Europe/Paris", ARROW_FLAG_NULLABLE},
        {"ts_us", "tsu:UTC", ARROW_FLAG_NULLABLE}, {"ls", "U", ARROW_FLAG_NULLABLE},
        {"fbin", "w:5", ARROW_FLAG_NULLABLE},    {"nul", "n", ARROW_FLAG_NULLABLE},
        {"fl", "+w:3", ARROW_FLAG_NULLABLE},     {"m", "+m", ARROW_FLAG_NULLABLE},
        {"nn", "l", 0},                          {"ms", "+m", ARROW_FLAG_NULLABLE | ARROW_FLAG_MAP_KEYS_SORTED},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        int64_t k = qv_field_child_index(&s->root, want[i].name);
        assert_true(k >= 0);
        assert_string_equal(cs.children[k]->name, want[i].name);
        assert_string_equal(cs.children[k]->format, want[i].format);
        assert_int_equal(cs.children[k]->flags, want[i].flags);
    }
    const struct ArrowSchema *m = cs.children[qv_field_child_index(&s->root, "m")];
    assert_int_equal(m->n_children, 1);
    assert_string_equal(m->children[0]->name, "entries");
    assert_string_equal(m->children[0]->format, "+s");
    assert_int_equal(m->children[0]->flags, 0);
    assert_string_equal(m->children[0]->children[0]->name, "key");
    assert_int_equal(m->children[0]->children[0]->flags, 0);
    assert_string_equal(m->children[0]->children[1]->format, "+l");

    /* Metadata: int32 count, then length-prefixed keys and values. */
    const char *md = cs.children[qv_field_child_index(&s->root, "i64")]->metadata;
    assert_non_null(md);
    int32_t n, kl, vl;
    memcpy(&n, md, 4);
    assert_int_equal(n, 2);
    memcpy(&kl, md + 4, 4);
    assert_int_equal(kl, 4);
    assert_memory_equal(md + 8, "unit", 4);
    memcpy(&vl, md + 12, 4);
    assert_int_equal(vl, 6);
    assert_memory_equal(md + 16, "meters", 6);
    assert_null(cs.children[0]->metadata);

    /* Import gives back an equal tree, binary metadata included. */
    struct qv_schema *back;
    assert_int_equal(qv_schema_import(&cs, e->res, &back, &err), 0);
    assert_true(qv_schema_equal(s, back, 0));
    const struct qv_field *i64 = &back->root.children[qv_field_child_index(&back->root, "i64")];
    assert_int_equal(i64->n_metadata, 2);
    assert_int_equal(i64->metadata[1].key_len, 2);
    assert_int_equal(i64->metadata[1].value_len, 3);
    assert_memory_equal(i64->metadata[1].value, "v\0x", 3);
    assert_int_equal(back->root.n_metadata, 1);
    qv_arrow_schema_release(&cs);
    assert_null(cs.release);
    qv_arrow_schema_release(&cs); /* idempotent */

    /* A deep copy is equal and independent. */
    struct qv_schema *copy;
    assert_int_equal(qv_schema_copy(back, e->res, &copy, &err), 0);
    qv_schema_destroy(back);
    assert_true(qv_schema_equal(s, copy, 0));
    qv_schema_destroy(copy);
    qv_schema_destroy(s);
}

/* Children of an exported schema may be moved out and outlive the parent. */
static void test_export_child_moved_out(void **state) {
    struct env *e = *state;
    struct qv_schema *s;
    assert_int_equal(qv_schema_create(&gen_root, e->res, &s, NULL), 0);
    struct ArrowSchema cs = {0}, col = {0};
    assert_int_equal(qv_schema_export(s, e->res, &cs, NULL), 0);
    int64_t k = qv_field_child_index(&s->root, "deep");
    assert_int_equal(qv_arrow_schema_move(&col, cs.children[k], NULL), 0);
    assert_int_equal(qv_arrow_schema_move(&col, cs.children[k], NULL), EINVAL); /* use after move */
    qv_arrow_schema_release(&cs);
    struct qv_schema *imported;
    assert_int_equal(qv_schema_import(&col, e->res, &imported, NULL), 0);
    assert_true(qv_field_equal(&imported->root, &s->root.children[k], 0));
    qv_schema_destroy(imported);
    qv_arrow_schema_release(&col);
    qv_schema_destroy(s);
}

static void test_export_template_field(void **state) {
    struct env *e = *state;
    struct ArrowSchema cs = {0};
    struct qv_field f = {.name = "price", .type = QV_TYPE_DECIMAL128, .precision = 12, .scale = 4};
    assert_int_equal(qv_field_export(&f, e->res, &cs, NULL), 0);
    assert_string_equal(cs.format, "d:12,4");
    assert_string_equal(cs.name, "price");
    assert_int_equal(cs.n_children, 0);
    assert_null(cs.children);
    qv_arrow_schema_release(&cs);
    struct qv_field bad = {.type = QV_TYPE_LIST};
    struct qv_error err = {0};
    cs.release = NULL;
    assert_int_equal(qv_field_export(&bad, e->res, &cs, &err), EINVAL);
    assert_null(cs.release);
}

/* ---- errors name the field path ---- */

static void noop_release(struct ArrowSchema *s) { (void)s; }

struct cnode {
    struct ArrowSchema s;
    struct ArrowSchema *kids[4];
};

static void cset(struct cnode *n, const char *format, const char *name, int64_t flags) {
    memset(n, 0, sizeof *n);
    n->s.format = format;
    n->s.name = name;
    n->s.flags = flags;
    n->s.release = noop_release;
    n->s.children = n->kids;
}

static void cadd(struct cnode *parent, struct cnode *child) {
    parent->kids[parent->s.n_children++] = &child->s;
}

static void expect_import_error(struct env *e, const struct ArrowSchema *cs, int code,
                                const char *path, const char *problem) {
    struct qv_schema *s = (struct qv_schema *)1;
    struct qv_error err = {0};
    int rc = qv_schema_import(cs, e->res, &s, &err);
    if (rc != code) fail_msg("want %s, got %s: %s", qv_errno_name(code), qv_errno_name(rc), err.message);
    assert_null(s);
    if (!strstr(err.message, path)) fail_msg("path '%s' not in '%s'", path, err.message);
    if (!strstr(err.message, problem)) fail_msg("'%s' not in '%s'", problem, err.message);
}

static void test_import_errors(void **state) {
    struct env *e = *state;
    /* root{ a: struct{ b: list<item: int32> }, m: map<entries{key, value}> } */
    struct cnode root, a, b, item, m, entries, key, value;
    cset(&root, "+s", "", 0);
    cset(&a, "+s", "a", ARROW_FLAG_NULLABLE);
    cset(&b, "+l", "b", ARROW_FLAG_NULLABLE);
    cset(&item, "i", "item", ARROW_FLAG_NULLABLE);
    cset(&m, "+m", "m", ARROW_FLAG_NULLABLE);
    cset(&entries, "+s", "entries", 0);
    cset(&key, "u", "key", 0);
    cset(&value, "i", "value", ARROW_FLAG_NULLABLE);
    cadd(&root, &a);
    cadd(&a, &b);
    cadd(&b, &item);
    cadd(&root, &m);
    cadd(&m, &entries);
    cadd(&entries, &key);
    cadd(&entries, &value);
    struct qv_schema *ok;
    assert_int_equal(qv_schema_import(&root.s, e->res, &ok, NULL), 0);
    assert_int_equal(ok->root.children[0].children[0].children[0].type, QV_TYPE_INT32);
    qv_schema_destroy(ok);

    item.s.release = NULL;
    expect_import_error(e, &root.s, EINVAL, "'a.b.<child 0>'", "released");
    item.s.release = noop_release;
    root.s.release = NULL;
    expect_import_error(e, &root.s, EINVAL, "'<root>'", "released");
    root.s.release = noop_release;

    item.s.format = "q";
    expect_import_error(e, &root.s, EINVAL, "'a.b.item'", "format 'q'");
    item.s.format = "vu";
    expect_import_error(e, &root.s, ENOSYS, "'a.b.item'", "not supported");
    item.s.format = NULL;
    expect_import_error(e, &root.s, EINVAL, "'a.b.item'", "NULL format");
    item.s.format = "i";

    b.s.n_children = 2;
    b.kids[1] = &item.s;
    expect_import_error(e, &root.s, EINVAL, "'a.b'", "needs 1 child");
    b.s.n_children = 1;
    b.s.children = NULL;
    expect_import_error(e, &root.s, EINVAL, "'a.b'", "no child array");
    b.s.children = b.kids;
    b.kids[0] = NULL;
    expect_import_error(e, &root.s, EINVAL, "'a.b.<child 0>'", "NULL ArrowSchema");
    b.kids[0] = &item.s;

    entries.s.format = "+l";
    expect_import_error(e, &root.s, EINVAL, "'m'", "struct of key and value");
    entries.s.format = "+s";
    entries.s.n_children = 1;
    expect_import_error(e, &root.s, EINVAL, "'m'", "struct of key and value");
    entries.s.n_children = 2;

    struct cnode dict;
    cset(&dict, "u", "", 0);
    value.s.dictionary = &dict.s;
    expect_import_error(e, &root.s, ENOSYS, "'m.entries.value'", "dictionary");
    value.s.dictionary = NULL;

    char md[8];
    int32_t neg = -1;
    memcpy(md, &neg, 4);
    key.s.metadata = md;
    expect_import_error(e, &root.s, EINVAL, "'m.entries.key'", "metadata");
    int32_t one = 1;
    memcpy(md, &one, 4);
    memcpy(md + 4, &neg, 4);
    expect_import_error(e, &root.s, EINVAL, "'m.entries.key'", "negative length");
    key.s.metadata = NULL;

    value.s.format = "d:40,2";
    expect_import_error(e, &root.s, EINVAL, "'m.entries.value'", "precision");
    value.s.format = "i";
    assert_int_equal(qv_schema_import(&root.s, e->res, &ok, NULL), 0);
    qv_schema_destroy(ok);
    assert_int_equal(qv_schema_import(NULL, e->res, &ok, NULL), EINVAL);
}

static void test_create_errors(void **state) {
    struct env *e = *state;
    struct qv_error err = {0};
    struct qv_schema *s;
    struct qv_field dec0 = {.name = "d", .type = QV_TYPE_DECIMAL128, .precision = 0};
    struct qv_field root = {.type = QV_TYPE_STRUCT, .n_children = 1, .children = &dec0};
    assert_int_equal(qv_schema_create(&root, e->res, &s, &err), EINVAL);
    assert_non_null(strstr(err.message, "'d'"));
    assert_null(s);

    struct qv_field list = {.name = "l", .type = QV_TYPE_LIST};
    root.children = &list;
    assert_int_equal(qv_schema_create(&root, e->res, &s, &err), EINVAL);
    assert_non_null(strstr(err.message, "'l'"));

    struct qv_field kv[3] = {{.name = "key", .type = QV_TYPE_INT32}, {.name = "value", .type = QV_TYPE_INT32},
                             {.name = "extra", .type = QV_TYPE_INT32}};
    struct qv_field ent = {.name = "entries", .type = QV_TYPE_STRUCT, .n_children = 3, .children = kv};
    struct qv_field map = {.name = "mp", .type = QV_TYPE_MAP, .n_children = 1, .children = &ent};
    root.children = &map;
    assert_int_equal(qv_schema_create(&root, e->res, &s, &err), EINVAL);
    assert_non_null(strstr(err.message, "'mp'"));

    struct qv_field unknown = {.name = "u", .type = (enum qv_type)99};
    root.children = &unknown;
    assert_int_equal(qv_schema_create(&root, e->res, &s, &err), EINVAL);
    assert_non_null(strstr(err.message, "unknown type"));

    struct qv_field md_bad = {.name = "x", .type = QV_TYPE_INT8, .n_metadata = 1, .metadata = NULL};
    root.children = &md_bad;
    assert_int_equal(qv_schema_create(&root, e->res, &s, &err), EINVAL);

    /* 70 levels of list nesting is refused, not a stack overflow. */
    struct qv_field deep[70];
    for (int i = 0; i < 70; i++)
        deep[i] = (struct qv_field){.name = "item", .type = i == 69 ? QV_TYPE_INT8 : QV_TYPE_LIST,
                                    .n_children = i == 69 ? 0 : 1, .children = i == 69 ? NULL : &deep[i + 1]};
    assert_int_equal(qv_schema_create(&deep[0], e->res, &s, &err), EINVAL);
    assert_non_null(strstr(err.message, "nesting"));
    assert_int_equal(qv_schema_create(&deep[10], e->res, &s, &err), 0); /* 60 levels are fine */
    qv_schema_destroy(s);
}

/* ---- equality and printing ---- */

static void test_equality(void **state) {
    struct env *e = *state;
    struct qv_kv md[1] = {{"k", "v", -1, -1}};
    struct qv_field cols[2] = {
        {.name = "t", .type = QV_TYPE_TIMESTAMP, .unit = QV_TIME_US, .timezone = "UTC", .nullable = true},
        {.name = "d", .type = QV_TYPE_DECIMAL128, .precision = 10, .scale = 2, .n_metadata = 1, .metadata = md},
    };
    struct qv_field root = {.type = QV_TYPE_STRUCT, .n_children = 2, .children = cols};
    struct qv_schema *a, *b;
    assert_int_equal(qv_schema_create(&root, e->res, &a, NULL), 0);
#define VARIANT(mutate, restore, flags_equal)                                  \
    do {                                                                       \
        mutate;                                                                \
        assert_int_equal(qv_schema_create(&root, e->res, &b, NULL), 0);        \
        assert_false(qv_schema_equal(a, b, 0));                                \
        if (flags_equal) assert_true(qv_schema_equal(a, b, flags_equal));      \
        qv_schema_destroy(b);                                                     \
        restore;                                                               \
    } while (0)
    VARIANT(cols[0].name = "u", cols[0].name = "t", QV_EQUAL_IGNORE_NAMES);
    VARIANT(cols[0].nullable = false, cols[0].nullable = true, QV_EQUAL_IGNORE_NULLABILITY);
    VARIANT(md[0].value = "w", md[0].value = "v", QV_EQUAL_IGNORE_METADATA);
    VARIANT(cols[0].timezone = NULL, cols[0].timezone = "UTC", 0);
    VARIANT(cols[0].unit = QV_TIME_NS, cols[0].unit = QV_TIME_US, 0);
    VARIANT(cols[1].scale = 3, cols[1].scale = 2, 0);
    VARIANT(cols[1].type = QV_TYPE_INT64, cols[1].type = QV_TYPE_DECIMAL128, 0);
    VARIANT(root.n_children = 1, root.n_children = 2, 0);
#undef VARIANT
    /* Parameters that do not belong to a type do not count; "" == no zone. */
    cols[0].precision = 7;
    cols[0].timezone = "UTC";
    assert_int_equal(qv_schema_create(&root, e->res, &b, NULL), 0);
    assert_true(qv_schema_equal(a, b, 0));
    assert_int_equal(b->root.children[0].precision, 0);
    qv_schema_destroy(b);
    assert_true(qv_schema_equal(a, a, 0));
    assert_false(qv_schema_equal(a, NULL, 0));
    qv_schema_destroy(a);
}

static void test_to_string(void **state) {
    struct env *e = *state;
    struct qv_schema *s;
    assert_int_equal(qv_schema_create(&gen_root, e->res, &s, NULL), 0);
    size_t need = qv_schema_to_string(s, NULL, 0);
    char *buf = malloc(need + 1);
    assert_int_equal(qv_schema_to_string(s, buf, need + 1), need);
    assert_int_equal(strlen(buf), need);
    static const char *const lines[] = {
        "b: bool\n",
        "i64: int64 {unit: meters, k\\x01: v\\x00x}\n",
        "dec38: decimal128(38, 10)\n",
        "ts_s: timestamp[s]\n",
        "ts_ms: timestamp[ms, Europe/Paris]\n",
        "fbin: fixed_size_binary[5]\n",
        "st: struct<x: int32 not null, y: utf8, z: struct<w: float64>>\n",
        "ll: large_list<item: utf8>\n",
        "fl: fixed_size_list<item: int16>[3]\n",
        "m: map<key: utf8 not null, value: list<item: int32>>\n",
        "deep: list<item: struct<a: bool, m: map<key: int32 not null, value: utf8>>>\n",
        "nn: int64 not null\n",
        "ms: map[sorted]<key: int64 not null, value: float32>\n",
        "metadata: {origin: test_builder}\n",
    };
    for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++)
        if (!strstr(buf, lines[i])) fail_msg("missing line '%s' in:\n%s", lines[i], buf);
    /* Truncation keeps snprintf semantics. */
    char small[10];
    assert_int_equal(qv_schema_to_string(s, small, sizeof small), need);
    assert_int_equal(strlen(small), 9);
    char t[64];
    qv_type_to_string(&s->root.children[qv_field_child_index(&s->root, "dec9")], t, sizeof t);
    assert_string_equal(t, "decimal128(9, 2)");
    qv_field_to_string(&s->root.children[qv_field_child_index(&s->root, "l")], t, sizeof t);
    assert_string_equal(t, "l: list<item: int64>");
    free(buf);
    qv_schema_destroy(s);
    assert_string_equal(qv_type_name(QV_TYPE_LARGE_BINARY), "large_binary");
    assert_string_equal(qv_type_name((enum qv_type)1000), "?");
}

/* ---- allocation failure ---- */

static void test_allocation_failures(void **state) {
    struct env *e = *state;
    struct qv_pool *pool = qv_reservation_pool(e->res);
    struct qv_schema *s;
    assert_int_equal(qv_schema_create(&gen_root, e->res, &s, NULL), 0);
    struct ArrowSchema cs = {0};
    assert_int_equal(qv_schema_export(s, e->res, &cs, NULL), 0);
    uint64_t used = qv_reservation_used(e->res);

    qv_pool_inject_alloc_failure(pool, 1);
    struct qv_schema *t = (struct qv_schema *)1;
    struct qv_error err = {0};
    assert_int_equal(qv_schema_create(&gen_root, e->res, &t, &err), ENOMEM);
    assert_null(t);
    qv_pool_inject_alloc_failure(pool, 1);
    assert_int_equal(qv_schema_import(&cs, e->res, &t, &err), ENOMEM);
    assert_null(t);
    qv_pool_inject_alloc_failure(pool, 1);
    assert_int_equal(qv_schema_copy(s, e->res, &t, &err), ENOMEM);
    qv_pool_inject_alloc_failure(pool, 1);
    struct ArrowSchema c2 = {0};
    assert_int_equal(qv_schema_export(s, e->res, &c2, &err), ENOMEM);
    assert_null(c2.release);
    assert_non_null(strstr(err.message, "schema export"));
    qv_pool_inject_alloc_failure(pool, 0);
    assert_int_equal(qv_reservation_used(e->res), used);

    qv_arrow_schema_release(&cs);
    qv_schema_destroy(s);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_format_roundtrip),
        cmocka_unit_test(test_format_errors),
        cmocka_unit_test_setup_teardown(test_export_import_all_types, setup, teardown),
        cmocka_unit_test_setup_teardown(test_export_child_moved_out, setup, teardown),
        cmocka_unit_test_setup_teardown(test_export_template_field, setup, teardown),
        cmocka_unit_test_setup_teardown(test_import_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_create_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_equality, setup, teardown),
        cmocka_unit_test_setup_teardown(test_to_string, setup, teardown),
        cmocka_unit_test_setup_teardown(test_allocation_failures, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
