/* Human-readable schema text for the CLI and messages. snprintf semantics
 * throughout, so callers can size a buffer with a first pass. */
#include <stdio.h>
#include <string.h>

#include "arrow/arrow_internal.h"

struct sbuf {
    char *buf;
    size_t cap;
    size_t len; /* what the full text needs, may exceed cap */
};

static void put(struct sbuf *s, const char *p, size_t n) {
    if (s->len < s->cap) {
        size_t room = s->cap - s->len;
        memcpy(s->buf + s->len, p, n < room ? n : room);
    }
    s->len += n;
}

static void puts_(struct sbuf *s, const char *p) { put(s, p, strlen(p)); }

static void putf(struct sbuf *s, const char *fmt, int a, int b) {
    char tmp[64];
    int n = snprintf(tmp, sizeof tmp, fmt, a, b);
    if (n > 0) put(s, tmp, (size_t)n);
}

/* Control bytes become \xNN; everything else (including UTF-8) is kept. */
static void put_escaped(struct sbuf *s, const char *p, size_t n) {
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)p[i];
        if (c < 0x20 || c == 0x7f) {
            char tmp[5];
            snprintf(tmp, sizeof tmp, "\\x%02x", c);
            put(s, tmp, 4);
        } else {
            put(s, (const char *)&p[i], 1);
        }
    }
}

static size_t finish(struct sbuf *s) {
    if (s->cap) s->buf[s->len < s->cap ? s->len : s->cap - 1] = '\0';
    return s->len;
}

static void put_field(struct sbuf *s, const struct qv_field *f);

static void put_metadata(struct sbuf *s, const struct qv_field *f) {
    puts_(s, "{");
    for (int64_t i = 0; i < f->n_metadata; i++) {
        const struct qv_kv *kv = &f->metadata[i];
        if (i) puts_(s, ", ");
        put_escaped(s, kv->key, kv->key_len >= 0 ? (size_t)kv->key_len : strlen(kv->key));
        puts_(s, ": ");
        if (kv->value)
            put_escaped(s, kv->value,
                        kv->value_len >= 0 ? (size_t)kv->value_len : strlen(kv->value));
    }
    puts_(s, "}");
}

static void put_children(struct sbuf *s, const struct qv_field *f) {
    for (int64_t i = 0; i < f->n_children; i++) {
        if (i) puts_(s, ", ");
        put_field(s, &f->children[i]);
    }
}

static void put_type(struct sbuf *s, const struct qv_field *f) {
    static const char *const units[] = {"s", "ms", "us", "ns"};
    switch (f->type) {
    case QV_TYPE_DECIMAL128: putf(s, "decimal128(%d, %d)", f->precision, f->scale); return;
    case QV_TYPE_FIXED_BINARY: putf(s, "fixed_size_binary[%d]", f->byte_width, 0); return;
    case QV_TYPE_TIMESTAMP:
        puts_(s, "timestamp[");
        puts_(s, units[(unsigned)f->unit & 3]);
        if (f->timezone && *f->timezone) {
            puts_(s, ", ");
            put_escaped(s, f->timezone, strlen(f->timezone));
        }
        puts_(s, "]");
        return;
    case QV_TYPE_STRUCT:
    case QV_TYPE_LIST:
    case QV_TYPE_LARGE_LIST:
        puts_(s, qv_type_name(f->type));
        puts_(s, "<");
        put_children(s, f);
        puts_(s, ">");
        return;
    case QV_TYPE_FIXED_LIST:
        puts_(s, "fixed_size_list<");
        put_children(s, f);
        putf(s, ">[%d]", f->list_size, 0);
        return;
    case QV_TYPE_MAP:
        /* The entries struct is structural noise; show key and value. */
        puts_(s, f->keys_sorted ? "map[sorted]<" : "map<");
        if (f->n_children == 1) put_children(s, &f->children[0]);
        puts_(s, ">");
        return;
    default: puts_(s, qv_type_name(f->type)); return;
    }
}

static void put_field(struct sbuf *s, const struct qv_field *f) {
    const char *name = f->name ? f->name : "";
    put_escaped(s, name, strlen(name));
    puts_(s, ": ");
    put_type(s, f);
    if (!f->nullable) puts_(s, " not null");
    if (f->n_metadata > 0) {
        puts_(s, " ");
        put_metadata(s, f);
    }
}

size_t qv_type_to_string(const struct qv_field *field, char *buf, size_t cap) {
    struct sbuf s = {buf, cap, 0};
    if (field) put_type(&s, field);
    return finish(&s);
}

size_t qv_field_to_string(const struct qv_field *field, char *buf, size_t cap) {
    struct sbuf s = {buf, cap, 0};
    if (field) put_field(&s, field);
    return finish(&s);
}

size_t qv_schema_to_string(const struct qv_schema *schema, char *buf, size_t cap) {
    struct sbuf s = {buf, cap, 0};
    if (schema) {
        const struct qv_field *root = &schema->root;
        if (root->type != QV_TYPE_STRUCT) {
            put_field(&s, root);
            puts_(&s, "\n");
        } else {
            for (int64_t i = 0; i < root->n_children; i++) {
                put_field(&s, &root->children[i]);
                puts_(&s, "\n");
            }
            if (root->n_metadata > 0) {
                puts_(&s, "metadata: ");
                put_metadata(&s, root);
                puts_(&s, "\n");
            }
        }
    }
    return finish(&s);
}
