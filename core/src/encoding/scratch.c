/* Memory for the encoding part: a tracked arena (whole-call lifetimes) and a
 * chunked scratch stack (nested temporaries), both charged to a reservation. */
#include "base/corrupt.h"
#include "base/cpu_internal.h"
#include "encoding/enc_internal.h"

void *qv__mem_alloc(struct qv__mem *m, size_t n, struct qv_error *err) {
    if (m->len == m->cap) {
        size_t ncap = m->cap ? m->cap * 2 : 32;
        struct qv__blk *nv =
            qv_realloc(m->r, m->v, m->cap * sizeof *m->v, ncap * sizeof *m->v, err);
        if (!nv) return NULL;
        m->v = nv;
        m->cap = ncap;
    }
    void *p = qv_alloc(m->r, n ? n : 1, err);
    if (!p) return NULL;
    m->v[m->len].p = p;
    m->v[m->len].n = n ? n : 1;
    m->len++;
    return p;
}

void *qv__mem_calloc(struct qv__mem *m, size_t n, struct qv_error *err) {
    void *p = qv__mem_alloc(m, n, err);
    if (p) memset(p, 0, n ? n : 1);
    return p;
}

static size_t mem_find(const struct qv__mem *m, const void *p) {
    /* Recent blocks are the ones released early, so search from the top. */
    for (size_t i = m->len; i-- > 0;)
        if (m->v[i].p == p) return i;
    return (size_t)-1;
}

void *qv__mem_realloc(struct qv__mem *m, void *p, size_t old_n, size_t new_n,
                      struct qv_error *err) {
    if (!p) return qv__mem_alloc(m, new_n, err);
    size_t i = mem_find(m, p);
    if (i == (size_t)-1) {
        qv_error_set(err, EINVAL, "encoding: internal error, block not in arena");
        return NULL;
    }
    void *np = qv_realloc(m->r, p, m->v[i].n, new_n ? new_n : 1, err);
    (void)old_n;
    if (!np) return NULL;
    m->v[i].p = np;
    m->v[i].n = new_n ? new_n : 1;
    return np;
}

void qv__mem_free(struct qv__mem *m, void *p) {
    if (!p) return;
    size_t i = mem_find(m, p);
    if (i == (size_t)-1) return;
    qv_free(m->r, p, m->v[i].n);
    memmove(&m->v[i], &m->v[i + 1], (m->len - i - 1) * sizeof *m->v);
    m->len--;
}

#define SLAB_BLOCK ((size_t)8192)
#define SLAB_MAX ((size_t)4608) /* larger requests get blocks of their own */

void *qv__mem_small(struct qv__mem *m, size_t n, struct qv_error *err) {
    size_t need = (n + 15) & ~(size_t)15;
    if (need == 0 || need < n) need = 16;
    if (need > m->slab_left) {
        if (need > SLAB_MAX) return qv__mem_calloc(m, n, err);
        uint8_t *b = qv__mem_alloc(m, SLAB_BLOCK, err);
        if (!b) return NULL;
        m->slab = b;
        m->slab_left = SLAB_BLOCK;
    }
    void *p = m->slab;
    m->slab += need;
    m->slab_left -= need;
    memset(p, 0, n);
    return p;
}

void *qv__mem_buf(struct qv__mem *m, size_t n, struct qv_error *err) {
    return n <= 1024 ? qv__mem_small(m, n, err) : qv__mem_alloc(m, n, err);
}

void qv__mem_free_all(struct qv__mem *m) {
    m->slab = NULL;
    m->slab_left = 0;
    for (size_t i = m->len; i-- > 0;) qv_free(m->r, m->v[i].p, m->v[i].n);
    if (m->v) qv_free(m->r, m->v, m->cap * sizeof *m->v);
    m->v = NULL;
    m->len = m->cap = 0;
}

uint64_t qv__mem_bytes(const struct qv__mem *m) {
    uint64_t t = m->cap * sizeof *m->v;
    for (size_t i = 0; i < m->len; i++) t += m->v[i].n;
    return t;
}

/* ---- Scratch stack ---- */

struct qv__stack_chunk {
    struct qv__stack_chunk *prev;
    size_t cap, used;
    size_t alloc; /* bytes allocated, header included */
    uint8_t pad[QV_ALIGNMENT - 4 * sizeof(size_t)];
};
_Static_assert(sizeof(struct qv__stack_chunk) == QV_ALIGNMENT, "chunk header is one line");

#define STACK_MIN_CHUNK ((size_t)64 << 10)

void *qv__stack_push(struct qv__stack *s, size_t n, struct qv_error *err) {
    size_t need = qv_align_up(n ? n : 1);
    if (need == 0) {
        qv_error_set(err, ENOMEM, "encoding: scratch request of %zu bytes is too large", n);
        return NULL;
    }
    struct qv__stack_chunk *c = s->top;
    if (c && c->cap - c->used >= need) {
        void *p = (uint8_t *)(c + 1) + c->used;
        c->used += need;
        return p;
    }
    struct qv__stack_chunk *nc = NULL;
    if (s->inline_buf && !c && !s->spare && s->inline_size - sizeof *nc >= need) {
        /* First push: the caller's inline chunk. */
        nc = s->inline_buf;
        nc->cap = s->inline_size - sizeof *nc;
        nc->alloc = 0;
        s->inline_buf = NULL;
    } else if (s->spare && s->spare->cap >= need) {
        nc = s->spare;
        s->spare = NULL;
    } else {
        size_t cap = need < STACK_MIN_CHUNK ? STACK_MIN_CHUNK : need;
        if (c && cap < c->cap * 2 && c->cap * 2 >= need) cap = c->cap * 2;
        size_t alloc = cap + sizeof *nc;
        nc = qv_alloc(s->r, alloc, err);
        if (!nc) return NULL;
        nc->cap = cap;
        nc->alloc = alloc;
    }
    nc->used = need;
    nc->prev = c;
    s->top = nc;
    return nc + 1;
}

struct qv__mark qv__stack_mark(const struct qv__stack *s) {
    struct qv__mark m = {s->top, s->top ? s->top->used : 0};
    return m;
}

/* Chunks with alloc 0 are inline (caller memory): never freed. */
static void chunk_free(struct qv__stack *s, struct qv__stack_chunk *c) {
    if (c->alloc) qv_free(s->r, c, c->alloc);
}

static void stack_drop_chunk(struct qv__stack *s, struct qv__stack_chunk *c) {
    /* Keep the largest released chunk for the next push. */
    if (!s->spare || s->spare->cap < c->cap) {
        if (s->spare) chunk_free(s, s->spare);
        s->spare = c;
    } else {
        chunk_free(s, c);
    }
}

void qv__stack_init_inline(struct qv__stack *s, void *buf, size_t size) {
    s->inline_buf = buf;
    s->inline_size = size;
}

void qv__stack_release(struct qv__stack *s, struct qv__mark m) {
    while (s->top && s->top != m.chunk) {
        struct qv__stack_chunk *c = s->top;
        s->top = c->prev;
        stack_drop_chunk(s, c);
    }
    if (s->top) s->top->used = m.used;
}

void qv__stack_free(struct qv__stack *s) {
    while (s->top) {
        struct qv__stack_chunk *c = s->top;
        s->top = c->prev;
        chunk_free(s, c);
    }
    if (s->spare) chunk_free(s, s->spare);
    s->spare = NULL;
}

uint64_t qv__stack_bytes(const struct qv__stack *s) {
    uint64_t t = s->spare ? s->spare->alloc : 0;
    for (const struct qv__stack_chunk *c = s->top; c; c = c->prev) t += c->alloc;
    return t;
}

/* ---- Binary output ---- */

/* The room `extra` more bytes need (plus 8 of write slack), or 0 with the
 * error when that passes the decoded size a chunk may have. */
static int binout_need(const struct qv__binout *o, size_t extra, size_t *need,
                       struct qv_error *err) {
    *need = o->size + extra + 8;
    if (*need < o->size || *need - 8 > QV_ENC_MAX_BYTES + (uint64_t)o->size)
        return qv__corrupt_set(err, "decode: binary data would exceed %llu bytes",
                               (unsigned long long)QV_ENC_MAX_BYTES);
    return 0;
}

static int binout_grow(struct qv__binout *o, size_t ncap, struct qv_error *err) {
    uint8_t *p = o->mem ? qv__mem_realloc(o->mem, o->data, o->cap, ncap, err)
                        : qv_realloc(o->r, o->data, o->cap, ncap, err);
    if (!p) return err ? err->code : ENOMEM;
    o->data = p;
    o->cap = ncap;
    return 0;
}

int qv__binout_reserve(struct qv__binout *o, size_t extra, struct qv_error *err) {
    size_t need;
    int rc = binout_need(o, extra, &need, err);
    if (rc || need <= o->cap) return rc;
    size_t ncap = o->cap ? o->cap : 256;
    while (ncap < need) ncap *= 2;
    return binout_grow(o, ncap, err);
}

/* Presized outputs are rounded up to a size class: a multiple of an eighth
 * of the power of two at or below the size (less than 12.5% more). A scan's batches of one
 * string column then ask for the same few sizes, which the pool's block
 * cache hands back (it matches sizes exactly); sized to the byte, every
 * batch's buffer was a size never seen before, so each was new memory and
 * the allocator's free lists fragmented: a streaming scan of lineitem SF1
 * peaked 40 MiB higher (105 -> 144 MiB, bench/compare.py's RSS child). */
static size_t size_class(size_t n) {
    if (n <= 4096) return (n + 63) & ~(size_t)63;
    size_t p2 = (size_t)qv_next_pow2_64(n);
    size_t step = (p2 == n ? p2 : p2 / 2) / 8;
    return (n + step - 1) & ~(step - 1);
}

int qv__binout_presize(struct qv__binout *o, size_t extra, struct qv_error *err) {
    size_t need;
    int rc = binout_need(o, extra, &need, err);
    if (rc || need <= o->cap) return rc;
    return binout_grow(o, size_class(need), err);
}

/* ---- Word conversions ---- */

/* Widening and narrowing run over every decoded integer column; the AVX2
 * variants convert 4 values per instruction (vpmovzx / vpermd) where the
 * baseline has to unpack with SSE2 shuffles. */
static QV__ALWAYS_INLINE void widen_body(const void *in, unsigned width, int64_t n,
                                         uint64_t *out) {
    switch (width) {
    case 1: {
        const uint8_t *p = in;
        for (int64_t i = 0; i < n; i++) out[i] = p[i];
        break;
    }
    case 2: {
        const uint16_t *p = in;
        for (int64_t i = 0; i < n; i++) out[i] = p[i];
        break;
    }
    case 4: {
        const uint32_t *p = in;
        for (int64_t i = 0; i < n; i++) out[i] = p[i];
        break;
    }
    default: memcpy(out, in, (size_t)n * 8); break;
    }
}

static QV__ALWAYS_INLINE void narrow_body(const uint64_t *in, unsigned width, int64_t n,
                                          void *out) {
    switch (width) {
    case 1: {
        uint8_t *p = out;
        for (int64_t i = 0; i < n; i++) p[i] = (uint8_t)in[i];
        break;
    }
    case 2: {
        uint16_t *p = out;
        for (int64_t i = 0; i < n; i++) p[i] = (uint16_t)in[i];
        break;
    }
    case 4: {
        uint32_t *p = out;
        for (int64_t i = 0; i < n; i++) p[i] = (uint32_t)in[i];
        break;
    }
    default: memcpy(out, in, (size_t)n * 8); break;
    }
}

static void widen_generic(const void *in, unsigned width, int64_t n, uint64_t *out) {
    widen_body(in, width, n, out);
}
static void narrow_generic(const uint64_t *in, unsigned width, int64_t n, void *out) {
    narrow_body(in, width, n, out);
}
#if QV__X86_DISPATCH
static QV__TARGET_AVX2 void widen_avx2(const void *in, unsigned width, int64_t n, uint64_t *out) {
    widen_body(in, width, n, out);
}
static QV__TARGET_AVX2 void narrow_avx2(const uint64_t *in, unsigned width, int64_t n, void *out) {
    narrow_body(in, width, n, out);
}
#endif

void qv__widen(const void *in, unsigned width, int64_t n, uint64_t *out) {
    QV__DISPATCH2(widen, in, width, n, out);
}

void qv__narrow(const uint64_t *in, unsigned width, int64_t n, void *out) {
    QV__DISPATCH2(narrow, in, width, n, out);
}

/* ---- Bit copies ---- */

static inline uint64_t load_bits64(const uint8_t *src, int64_t bit, int64_t avail) {
    /* Reads up to 64 bits starting at `bit`, never touching bytes past
     * bit + avail (avail <= 64). */
    int64_t byte = bit >> 3;
    unsigned sh = (unsigned)(bit & 7);
    int64_t nbytes = (sh + avail + 7) >> 3;
    uint8_t tmp[16] = {0};
    memcpy(tmp, src + byte, (size_t)nbytes);
    uint64_t lo, hi;
    memcpy(&lo, tmp, 8);
    memcpy(&hi, tmp + 8, 8);
    return sh ? (lo >> sh) | (hi << (64 - sh)) : lo;
}

void qv__copy_bits(uint8_t *dst, int64_t dst_off, const uint8_t *src, int64_t src_off,
                   int64_t n) {
    if (n <= 0) return;
    /* Head: bring dst to a byte boundary. */
    while (n > 0 && (dst_off & 7)) {
        qv_bit_put(dst, dst_off++, qv_bit_get(src, src_off++));
        n--;
    }
    if (!(src_off & 7)) {
        memcpy(dst + (dst_off >> 3), src + (src_off >> 3), (size_t)(n >> 3));
    } else {
        int64_t i = 0;
        for (; i + 64 <= n; i += 64) {
            uint64_t w = load_bits64(src, src_off + i, 64);
            memcpy(dst + ((dst_off + i) >> 3), &w, 8);
        }
        for (; i + 8 <= n; i += 8)
            dst[(dst_off + i) >> 3] = (uint8_t)load_bits64(src, src_off + i, 8);
    }
    int64_t done = n & ~(int64_t)7;
    for (int64_t i = done; i < n; i++)
        qv_bit_put(dst, dst_off + i, qv_bit_get(src, src_off + i));
}
