/* Field paths: the one rule by which every front end and the predicate
 * language name a column or a nested field. Parsing splits a text into
 * names; resolution walks a schema name by name. The predicate parser has
 * its own lexer (an unquoted name there must also be an identifier, since
 * operators follow it), but it hands its names to the same resolution, so
 * `a.b`, `"a.b"` and `A.B` mean the same field in a filter and in a
 * projection. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "arrow/arrow_internal.h"

int64_t qv_field_find_child(const struct qv_field *f, const char *name, bool quoted,
                            int64_t hits[2], bool *folded) {
    *folded = false;
    hits[0] = hits[1] = -1;
    for (int64_t i = 0; i < f->n_children && hits[1] < 0; i++)
        if (f->children[i].name && strcmp(f->children[i].name, name) == 0)
            hits[hits[0] < 0 ? 0 : 1] = i;
    if (hits[0] < 0 && !quoted) {
        *folded = true;
        for (int64_t i = 0; i < f->n_children && hits[1] < 0; i++)
            if (f->children[i].name && strcasecmp(f->children[i].name, name) == 0)
                hits[hits[0] < 0 ? 0 : 1] = i;
    }
    if (hits[0] >= 0 && hits[1] < 0) return hits[0];
    return hits[0] >= 0 ? -2 : -1;
}

int qv_field_path_parse(const char *text, char *buf, size_t cap, const char **names,
                        bool *quoted, int32_t max, int32_t *n, struct qv_error *err) {
    *n = 0;
    if (!text) return qv_error_set(err, EINVAL, "column name is NULL");
    size_t len = strlen(text), i = 0, used = 0;
    if (cap < len + 1)
        return qv_error_set(err, EINVAL, "column name '%.200s': buffer of %zu bytes too small", text, cap);
    for (;;) {
        while (i < len && text[i] == ' ') i++;
        if (*n == max)
            return qv_error_set(err, EINVAL, "column name '%.200s': more than %d names in the path",
                                text, (int)max);
        size_t start = i;
        char *out = buf + used;
        size_t k = 0;
        if (i < len && text[i] == '"') {
            i++;
            for (;;) {
                if (i >= len)
                    return qv_error_set(err, EINVAL,
                                        "column name '%.200s': unterminated quoted name at "
                                        "position %zu",
                                        text, start + 1);
                if (text[i] == '"') {
                    if (i + 1 < len && text[i + 1] == '"') {
                        out[k++] = '"';
                        i += 2;
                        continue;
                    }
                    i++;
                    break;
                }
                out[k++] = text[i++];
            }
            quoted[*n] = true;
            while (i < len && text[i] == ' ') i++;
            if (i < len && text[i] != '.')
                return qv_error_set(err, EINVAL,
                                    "column name '%.200s': expected '.' after the quoted name at "
                                    "position %zu",
                                    text, i + 1);
        } else {
            while (i < len && text[i] != '.') {
                if (text[i] == '"')
                    return qv_error_set(err, EINVAL,
                                        "column name '%.200s': a name holding '\"' must be quoted "
                                        "(\"\" for the quote) at position %zu",
                                        text, i + 1);
                out[k++] = text[i++];
            }
            while (k > 0 && out[k - 1] == ' ') k--;
            if (k == 0)
                return qv_error_set(err, EINVAL, "column name '%.200s': empty name at position %zu",
                                    text, start + 1);
            quoted[*n] = false;
        }
        out[k] = 0;
        names[(*n)++] = out;
        used += k + 1;
        if (i >= len) return 0;
        i++; /* the dot */
    }
}

/* Edit distance ignoring ASCII case, for "closest" suggestions; names past
 * 128 bytes are not compared (a suggestion is a courtesy, not worth a
 * quadratic cost on huge names). */
static int distance(const char *a, const char *b) {
    size_t n = strlen(a), m = strlen(b);
    if (n > 128 || m > 128) return 1 << 20;
    int row[129];
    for (size_t j = 0; j <= m; j++) row[j] = (int)j;
    for (size_t i = 1; i <= n; i++) {
        int diag = row[0];
        row[0] = (int)i;
        for (size_t j = 1; j <= m; j++) {
            int up = row[j];
            int ca = a[i - 1] >= 'A' && a[i - 1] <= 'Z' ? a[i - 1] + 32 : a[i - 1];
            int cb = b[j - 1] >= 'A' && b[j - 1] <= 'Z' ? b[j - 1] + 32 : b[j - 1];
            int v = diag + (ca != cb);
            if (row[j] + 1 < v) v = row[j] + 1;
            if (row[j - 1] + 1 < v) v = row[j - 1] + 1;
            row[j] = v;
            diag = up;
        }
    }
    return row[m];
}

/* " (closest: 'x')" for the child of f nearest to `name`, or "". Looks at
 * the first 100,000 children only: the message must stay cheap. */
static void closest(const struct qv_field *f, const char *name, char *buf, size_t cap) {
    int best = 1 << 20;
    int64_t at = -1;
    for (int64_t i = 0; i < f->n_children && i < 100000; i++) {
        const char *c = f->children[i].name ? f->children[i].name : "";
        int d = distance(name, c);
        if (d < best) {
            best = d;
            at = i;
        }
    }
    if (at < 0) snprintf(buf, cap, " (it has no fields)");
    else snprintf(buf, cap, " (closest: '%.200s')", f->children[at].name ? f->children[at].name : "");
}

static int ambiguous(const struct qv_field *f, const char *name, const char *parent,
                     const int64_t hits[2], bool folded, struct qv_error *err) {
    char how[600];
    const char *a = f->children[hits[0]].name, *b = f->children[hits[1]].name;
    if (folded)
        snprintf(how, sizeof how,
                 "fields %lld ('%.200s') and %lld ('%.200s') match it ignoring case; quote the "
                 "name to match one exactly",
                 (long long)hits[0], a, (long long)hits[1], b);
    else
        snprintf(how, sizeof how, "fields %lld and %lld both have that name", (long long)hits[0],
                 (long long)hits[1]);
    if (!parent) return qv_error_set(err, EINVAL, "ambiguous column name '%.300s': %s", name, how);
    return qv_error_set(err, EINVAL, "ambiguous field name '%.300s' in struct '%.300s': %s", name,
                        parent, how);
}

size_t qv_field_name_display(const char *name, char *buf, size_t cap) {
    size_t n = name ? strlen(name) : 0, o = 0;
    for (size_t i = 0; i < n;) {
        size_t k = (size_t)qv__utf8_seq((const uint8_t *)name + i, (int64_t)(n - i));
        char esc[5];
        const char *piece = name + i;
        size_t len = k;
        if (!k) {
            snprintf(esc, sizeof esc, "\\x%02x", (unsigned char)name[i]);
            piece = esc;
            len = 4;
            k = 1;
        }
        if (o + len < cap) memcpy(buf + o, piece, len);
        else if (o < cap) cap = o + 1; /* truncated: stop writing, keep counting */
        o += len;
        i += k;
    }
    if (cap) buf[o < cap ? o : cap - 1] = '\0';
    return o;
}

/* The display form's part of the rule: a child whose name is not valid
 * UTF-8 is also selected by its display form (`a\xffb`), which is the name
 * Arrow consumers are handed (they require UTF-8 names). Only tried when
 * nothing matched the bytes themselves. -1 none, -2 several, else index. */
static int64_t find_by_display(const struct qv_field *f, const char *name) {
    int64_t hit = -1;
    size_t want = strlen(name);
    for (int64_t i = 0; i < f->n_children; i++) {
        const char *c = f->children[i].name;
        if (!c || qv_field_name_display(c, NULL, 0) == strlen(c)) continue; /* valid UTF-8 */
        char buf[1024];
        size_t len = qv_field_name_display(c, buf, sizeof buf);
        if (len != want || len >= sizeof buf || memcmp(buf, name, len) != 0) continue;
        if (hit >= 0) return -2;
        hit = i;
    }
    return hit;
}

int qv_field_resolve_names(const struct qv_field *root, const char *const *names,
                           const bool *quoted, int32_t n, unsigned flags,
                           const struct qv_field_lookup *lookup, struct qv_field_ref *out,
                           struct qv_error *err) {
    memset(out, 0, sizeof *out);
    out->column = -1;
    if (!root || !names || n < 1) return qv_error_set(err, EINVAL, "an empty column path");
    const struct qv_field *f = root;
    for (int32_t i = 0; i < n; i++) {
        const char *name = names[i];
        bool q = quoted ? quoted[i] : true;
        const struct qv_field *in = f; /* the field whose children are searched */
        int32_t entries = 0;          /* a map's implicit entries step */
        if (i > 0) {
            bool list_like = f->type == QV_TYPE_LIST || f->type == QV_TYPE_LARGE_LIST ||
                             f->type == QV_TYPE_FIXED_LIST;
            bool map = f->type == QV_TYPE_MAP && f->n_children == 1;
            if (f->type != QV_TYPE_STRUCT && (flags & QV_PATH_STRUCTS_ONLY || !(list_like || map))) {
                char tb[96];
                qv_type_to_string(f, tb, sizeof tb);
                return qv_error_set(err, ENOENT, "'%.300s' is %s, not a struct: no field '%.300s' in it",
                                    names[i - 1], tb, name);
            }
            if (map) {
                in = &f->children[0];
                entries = 1;
            }
        }
        if (out->depth + entries + (i > 0) > QV_FIELD_PATH_MAX)
            return qv_error_set(err, EINVAL, "column path deeper than %d levels", QV_FIELD_PATH_MAX);
        int64_t hits[2];
        bool folded;
        int64_t k = lookup ? lookup->find(lookup->ctx, in, name, q, hits, &folded)
                           : qv_field_find_child(in, name, q, hits, &folded);
        if (k == -3) return err && err->code ? err->code : ENOMEM;
        if (k == -1) k = find_by_display(in, name);
        if (k == -2) return ambiguous(in, name, i ? names[i - 1] : NULL, hits, folded, err);
        if (k < 0) {
            char near[300];
            closest(in, name, near, sizeof near);
            if (i == 0) return qv_error_set(err, ENOENT, "no column '%.300s'%s", name, near);
            return qv_error_set(err, ENOENT, "%s '%.300s' has no field '%.300s'%s",
                                f->type == QV_TYPE_STRUCT ? "struct"
                                : f->type == QV_TYPE_MAP  ? "map"
                                                          : "list",
                                names[i - 1], name, near);
        }
        if (i == 0) {
            out->column = (int32_t)k;
        } else {
            if (entries) out->path[out->depth++] = 0;
            out->path[out->depth++] = (int32_t)k;
        }
        f = &in->children[k];
    }
    out->field = f;
    return 0;
}

int qv_field_resolve_path(const struct qv_field *root, const char *text, struct qv_field_ref *out,
                          struct qv_error *err) {
    memset(out, 0, sizeof *out);
    out->column = -1;
    if (!text) return qv_error_set(err, EINVAL, "column name is NULL");
    size_t cap = strlen(text) + 1;
    char small[256];
    char *buf = cap <= sizeof small ? small : malloc(cap);
    if (!buf) return qv_error_set(err, ENOMEM, "column name '%.200s': out of memory", text);
    const char *names[QV_FIELD_PATH_MAX];
    bool quoted[QV_FIELD_PATH_MAX];
    int32_t n = 0;
    int rc = qv_field_path_parse(text, buf, cap, names, quoted, QV_FIELD_PATH_MAX, &n, err);
    if (!rc) {
        rc = qv_field_resolve_names(root, names, quoted, n, 0, NULL, out, err);
        if (rc) qv_error_wrap(err, rc, "column '%.300s': ", text);
    }
    if (buf != small) free(buf);
    return rc;
}
