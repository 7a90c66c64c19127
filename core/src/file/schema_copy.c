/* Self-contained schemas: a deep copy of an ArrowSchema in malloc'd
 * memory, so a schema handed to a consumer (pyarrow, Arrow Java) does not
 * depend on any pool, file or stream: consumers keep schemas after the
 * stream and the file are gone. Names and metadata are copied as bytes. */
#include <stdlib.h>
#include <string.h>

#include "file/file_internal.h"

struct copy_priv {
    char *format, *name, *metadata;
    struct ArrowSchema **children;
    struct ArrowSchema *kids;
    struct ArrowSchema *dictionary;
};

static void copy_release(struct ArrowSchema *s) {
    if (!s->release) return;
    struct copy_priv *p = s->private_data;
    for (int64_t i = 0; i < s->n_children; i++)
        if (p->kids[i].release) p->kids[i].release(&p->kids[i]);
    if (p->dictionary && p->dictionary->release) p->dictionary->release(p->dictionary);
    free(p->format);
    free(p->name);
    free(p->metadata);
    free(p->children);
    free(p->kids);
    free(p->dictionary);
    free(p);
    s->release = NULL;
}

/* Bytes of Arrow metadata: int32 count, then per key and value an int32
 * length and the bytes. The source is one we or a validated producer made. */
static size_t metadata_size(const char *m) {
    int32_t n, len;
    memcpy(&n, m, 4);
    size_t off = 4;
    for (int32_t i = 0; i < n * 2; i++) {
        memcpy(&len, m + off, 4);
        off += 4 + (size_t)len;
    }
    return off;
}

static char *dup_bytes(const char *s, size_t n) {
    char *d = malloc(n ? n : 1);
    if (d) memcpy(d, s, n);
    return d;
}

int qv__schema_copy_malloc(struct ArrowSchema *dst, const struct ArrowSchema *src) {
    memset(dst, 0, sizeof *dst);
    struct copy_priv *p = calloc(1, sizeof *p);
    if (!p) return ENOMEM;
    dst->private_data = p;
    dst->release = copy_release;
    dst->flags = src->flags;
    p->format = dup_bytes(src->format, strlen(src->format) + 1);
    if (!p->format) goto oom;
    dst->format = p->format;
    if (src->name) {
        /* Arrow names are UTF-8: a name that is not is handed out in its
         * display form, by which qv_file_select also finds it. */
        size_t len = qv_field_name_display(src->name, NULL, 0);
        p->name = malloc(len + 1);
        if (!p->name) goto oom;
        qv_field_name_display(src->name, p->name, len + 1);
        dst->name = p->name;
    }
    if (src->metadata) {
        p->metadata = dup_bytes(src->metadata, metadata_size(src->metadata));
        if (!p->metadata) goto oom;
        dst->metadata = p->metadata;
    }
    if (src->n_children > 0) {
        p->children = calloc((size_t)src->n_children, sizeof *p->children);
        p->kids = calloc((size_t)src->n_children, sizeof *p->kids);
        if (!p->children || !p->kids) goto oom;
        dst->children = p->children;
        for (int64_t i = 0; i < src->n_children; i++) {
            if (qv__schema_copy_malloc(&p->kids[i], src->children[i])) goto oom;
            dst->n_children = i + 1;
            p->children[i] = &p->kids[i];
        }
    }
    if (src->dictionary) {
        p->dictionary = calloc(1, sizeof *p->dictionary);
        if (!p->dictionary || qv__schema_copy_malloc(p->dictionary, src->dictionary)) goto oom;
        dst->dictionary = p->dictionary;
    }
    return 0;
oom:
    copy_release(dst);
    return ENOMEM;
}
