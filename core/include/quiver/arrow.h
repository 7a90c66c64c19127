/*
 * Quiver arrow: the Arrow C Data / C Stream interfaces, Quiver's owned schema
 * tree, import validation, owned arrays and the batch builder.
 *
 * Ownership in one paragraph. Arrow structs follow the C Data Interface: a
 * struct whose `release` is non-NULL owns its data, and calling `release`
 * frees it and sets `release` to NULL. Every function here that produces an
 * Arrow struct ("out") leaves it owned by the caller on success and released
 * (release == NULL) on failure. Every struct that Quiver exports frees its
 * memory through the `qv_reservation` it was allocated from, so THAT
 * RESERVATION MUST OUTLIVE EVERY EXPORTED STRUCT (C has no refcounting across
 * the ABI; the consumer cannot keep our reservation alive for us). Release
 * exported structs on the reservation's owner thread, or while no other thread
 * uses the reservation (reservations are single-threaded, memory.h).
 */
#ifndef QUIVER_ARROW_H
#define QUIVER_ARROW_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "quiver/base.h"
#include "quiver/memory.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ==== Arrow C Data Interface (verbatim from the Arrow specification) ==== */

#ifndef ARROW_C_DATA_INTERFACE
#define ARROW_C_DATA_INTERFACE

#define ARROW_FLAG_DICTIONARY_ORDERED 1
#define ARROW_FLAG_NULLABLE 2
#define ARROW_FLAG_MAP_KEYS_SORTED 4

struct ArrowSchema {
  // Array type description
  const char* format;
  const char* name;
  const char* metadata;
  int64_t flags;
  int64_t n_children;
  struct ArrowSchema** children;
  struct ArrowSchema* dictionary;

  // Release callback
  void (*release)(struct ArrowSchema*);
  // Opaque producer-specific data
  void* private_data;
};

struct ArrowArray {
  // Array data description
  int64_t length;
  int64_t null_count;
  int64_t offset;
  int64_t n_buffers;
  int64_t n_children;
  const void** buffers;
  struct ArrowArray** children;
  struct ArrowArray* dictionary;

  // Release callback
  void (*release)(struct ArrowArray*);
  // Opaque producer-specific data
  void* private_data;
};

#endif  // ARROW_C_DATA_INTERFACE

#ifndef ARROW_C_STREAM_INTERFACE
#define ARROW_C_STREAM_INTERFACE

struct ArrowArrayStream {
  // Callbacks providing stream functionality
  int (*get_schema)(struct ArrowArrayStream*, struct ArrowSchema* out);
  int (*get_next)(struct ArrowArrayStream*, struct ArrowArray* out);
  const char* (*get_last_error)(struct ArrowArrayStream*);

  // Release callback
  void (*release)(struct ArrowArrayStream*);

  // Opaque producer-specific data
  void* private_data;
};

#endif  // ARROW_C_STREAM_INTERFACE

/* ==== Release and move ====
 * Release: NULL-safe and idempotent; a released struct (release == NULL) is
 * left alone, so a double release is harmless when it goes through these.
 * Move: a bitwise copy into `dst`, after which `src` is marked released, so
 * exactly one of them owns the data. EINVAL (nothing moved) when `src` is
 * already released (use after move) or `dst` still owns something (the move
 * would leak it). */
QV_API void qv_arrow_schema_release(struct ArrowSchema *schema);
QV_API void qv_arrow_array_release(struct ArrowArray *array);
QV_API void qv_arrow_stream_release(struct ArrowArrayStream *stream);
QV_API int qv_arrow_schema_move(struct ArrowSchema *dst, struct ArrowSchema *src, struct qv_error *err);
QV_API int qv_arrow_array_move(struct ArrowArray *dst, struct ArrowArray *src, struct qv_error *err);
QV_API int qv_arrow_stream_move(struct ArrowArrayStream *dst, struct ArrowArrayStream *src,
                         struct qv_error *err);

/* 64 zero bytes, 64-byte aligned: a valid buffer for zero-length arrays whose
 * layout requires one (e.g. the single offset of an empty utf8 array).
 * Never written, never freed. */
QV_API const void *qv_arrow_zero_buffer(void);

/* ==== The schema tree ====
 * A `qv_field` describes one Arrow field: type and parameters, name,
 * nullability, metadata and children, mirroring ArrowSchema one to one (a map
 * has one child, the "entries" struct with "key" and "value" children, as in
 * Arrow). The same struct serves two roles:
 *  - a template the caller lays out (stack, static, compound literals) and
 *    hands to qv_schema_create, which deep-copies it;
 *  - the read-only nodes of an owned `qv_schema`, which is easy to walk:
 *    schema->root.children[i].children[j]...
 * A record batch schema has a STRUCT root whose children are the columns. */

enum qv_type {
    QV_TYPE_NULL = 0,
    QV_TYPE_BOOL,
    QV_TYPE_INT8,
    QV_TYPE_INT16,
    QV_TYPE_INT32,
    QV_TYPE_INT64,
    QV_TYPE_UINT8,
    QV_TYPE_UINT16,
    QV_TYPE_UINT32,
    QV_TYPE_UINT64,
    QV_TYPE_FLOAT16,      /* "e"; 2-byte IEEE half, carried as raw bits */
    QV_TYPE_FLOAT32,
    QV_TYPE_FLOAT64,
    QV_TYPE_DECIMAL128,   /* "d:p,s"; precision 1..38 */
    QV_TYPE_DATE32,       /* "tdD"; days since the epoch */
    QV_TYPE_TIMESTAMP,    /* "ts{s,m,u,n}:tz"; int64 since the epoch */
    QV_TYPE_UTF8,
    QV_TYPE_LARGE_UTF8,
    QV_TYPE_BINARY,
    QV_TYPE_LARGE_BINARY,
    QV_TYPE_FIXED_BINARY, /* "w:N"; byte_width = N */
    QV_TYPE_STRUCT,
    QV_TYPE_LIST,
    QV_TYPE_LARGE_LIST,
    QV_TYPE_FIXED_LIST,   /* "+w:N"; list_size = N */
    QV_TYPE_MAP,
    QV_TYPE_COUNT_
};

enum qv_time_unit { QV_TIME_S = 0, QV_TIME_MS, QV_TIME_US, QV_TIME_NS };

/* ---- Dates and timestamps as text ----
 *
 * One grammar for every front end (the predicate language's DATE and
 * TIMESTAMP literals, CSV import), ISO 8601's extended format:
 *
 *   date       YYYY-MM-DD; a year outside 0000..9999 carries a sign and at
 *              least four digits ("+10000-01-01", "-0001-12-31"), so every
 *              date32 value has a text form that reads back. Months and
 *              days may have one digit ("1994-1-1").
 *   timestamp  date[(T|t|space)H[H]:MM[:SS[.f]]][zone], f 1..9 digits;
 *              zone Z, z or UTC (any case), or +HH, +HHMM, +HH:MM (or -),
 *              offsets below 24 hours, optionally after blanks. Without a
 *              time it is midnight; an offset is applied, so the value is
 *              UTC. Hours 00..23, minutes and seconds 00..59 (no leap
 *              second: Arrow has none).
 *
 * Blanks (spaces, tabs) around the text are ignored. Errors are EINVAL for
 * malformed text or a day that does not exist (the message quotes the text
 * and says what is wrong), EOVERFLOW for a value outside the type's range.
 * Days are counted from 1970-01-01 in the proleptic Gregorian calendar. */

/* Days since the epoch of a calendar date (month 1..12, day 1..31, |year|
 * below 10^15: exact, without overflow). */
QV_API int64_t qv_date32_from_civil(int64_t year, unsigned month, unsigned day);
/* The calendar date of a day count (any int64). */
QV_API void qv_date32_to_civil(int64_t days, int64_t *year, unsigned *month, unsigned *day);
/* Parses a date (see above) into a date32 value. */
QV_API int qv_date32_parse(const char *s, size_t n, int32_t *out, struct qv_error *err);
/* "1995-03-15", "+10000-01-01", "-0001-12-31": the text the parser reads
 * back. Any day count is accepted (a timestamp's days too). snprintf
 * semantics: returns the length of the full text; 32 bytes always suffice. */
QV_API size_t qv_date32_format(int64_t days, char *buf, size_t cap);

/* A timestamp's text, split: what qv_timestamp_parse_parts found. */
struct qv_timestamp_parts {
    int64_t seconds;     /* since the epoch, UTC (the offset applied) */
    int32_t nanos;       /* 0..999,999,999, added to seconds */
    int fraction_digits; /* digits written after the point, 0..9 */
    bool has_time;       /* a time of day was written (else midnight) */
    bool has_zone;       /* Z, UTC or an offset was written */
};
/* Parses a timestamp (see above) without a unit: any value in the grammar
 * whose seconds fit int64. */
QV_API int qv_timestamp_parse_parts(const char *s, size_t n, struct qv_timestamp_parts *out,
                                    struct qv_error *err);
/* Parses a timestamp into `unit` since the epoch. A fraction finer than the
 * unit is EINVAL unless its extra digits are zeros (nothing is rounded
 * away); a value beyond int64 in that unit is EOVERFLOW. `parts` (may be
 * NULL) receives what was written. */
QV_API int qv_timestamp_parse(const char *s, size_t n, enum qv_time_unit unit, int64_t *out,
                              struct qv_timestamp_parts *parts, struct qv_error *err);
/* ISO 8601: "1995-03-15T12:30:00", a fraction of as many digits as the unit
 * has when the sub-second part is nonzero, and "Z" when `utc` (a column
 * with a time zone: Arrow stores such values as UTC instants). snprintf
 * semantics; 48 bytes always suffice. */
QV_API size_t qv_timestamp_format(int64_t value, enum qv_time_unit unit, bool utc, char *buf,
                                  size_t cap);

/* One key-value metadata pair. Arrow metadata is binary (lengths, not NUL
 * terminators); in an owned schema both strings are also NUL-terminated. In a
 * template a negative length means "NUL-terminated, use strlen". */
struct qv_kv {
    const char *key;
    const char *value;
    int32_t key_len;
    int32_t value_len;
};

struct qv_field {
    const char *name;          /* NULL in a template means "" */
    enum qv_type type;
    bool nullable;
    bool keys_sorted;          /* MAP only */
    int32_t precision, scale;  /* DECIMAL128 */
    int32_t byte_width;        /* FIXED_BINARY */
    int32_t list_size;         /* FIXED_LIST */
    enum qv_time_unit unit;    /* TIMESTAMP */
    const char *timezone;      /* TIMESTAMP; NULL (or "" in a template) = none */
    int64_t n_children;
    const struct qv_field *children;
    int64_t n_metadata;
    const struct qv_kv *metadata;
};

/* An owned, immutable field tree in one allocation charged to `reservation`. */
struct qv_schema {
    struct qv_field root;
    struct qv_reservation *reservation;
    size_t alloc_size;
};

/* Deep-copies the template `root` after checking it (known type, parameters
 * in range, child counts per type: LIST/LARGE_LIST/FIXED_LIST one child, MAP
 * one STRUCT child with exactly two children (key, value), scalar types none;
 * at most 64 levels). Nullability flags of map entries and keys are kept as
 * given (producers differ); the builder never writes null keys. On success
 * *out is owned by the caller (qv_schema_destroy); on failure *out is NULL and
 * nothing is held. */
QV_API int qv_schema_create(const struct qv_field *root, struct qv_reservation *r,
                     struct qv_schema **out, struct qv_error *err);
/* Deep copy of `src` into `r`; same ownership as qv_schema_create. */
QV_API int qv_schema_copy(const struct qv_schema *src, struct qv_reservation *r,
                   struct qv_schema **out, struct qv_error *err);
/* Reads (does not consume) an ArrowSchema. The caller keeps ownership of
 * `src`. EINVAL naming the field path for a released struct, a malformed
 * format string, bad metadata, or children that do not fit the type; ENOSYS
 * for valid Arrow types Quiver does not support (dictionary encoding,
 * views, unions, run-end encoding, ...). Ownership of *out as in create. */
QV_API int qv_schema_import(const struct ArrowSchema *src, struct qv_reservation *r,
                     struct qv_schema **out, struct qv_error *err);
/* Exports the whole schema (its root field) as an ArrowSchema allocated from
 * `r`. On success `out` owns it (release frees through `r`, which must
 * outlive it); on failure out->release is NULL. */
QV_API int qv_schema_export(const struct qv_schema *schema, struct qv_reservation *r,
                     struct ArrowSchema *out, struct qv_error *err);
/* Exports any field (owned or template, assumed valid) as a root ArrowSchema. */
QV_API int qv_field_export(const struct qv_field *field, struct qv_reservation *r,
                    struct ArrowSchema *out, struct qv_error *err);
/* Frees the schema through its reservation. NULL-safe. */
QV_API void qv_schema_destroy(struct qv_schema *schema);

/* Equality; flags relax it. Returns true when equal. */
#define QV_EQUAL_IGNORE_NAMES 1u       /* field names (not map/struct structure) */
#define QV_EQUAL_IGNORE_NULLABILITY 2u
#define QV_EQUAL_IGNORE_METADATA 4u
QV_API bool qv_field_equal(const struct qv_field *a, const struct qv_field *b, unsigned flags);
QV_API bool qv_schema_equal(const struct qv_schema *a, const struct qv_schema *b, unsigned flags);

/* Index of the child called `name` (first match), or -1. */
QV_API int64_t qv_field_child_index(const struct qv_field *field, const char *name);

/* ==== Field paths: the one name rule ====
 * How every front end (projection by name, qv_file_select in file.h) and the
 * predicate language (scan.h) name a column or a nested field:
 *  - A path is names separated by dots. A name holding a dot or a double
 *    quote, or starting or ending with a space, is written in double quotes
 *    with "" for a quote inside: `"a.b".c` is field c of column "a.b".
 *    Spaces around a name are skipped (`a . b` is `a.b`). Names are bytes: UTF-8 or not, they match bytewise;
 *    a name that is not UTF-8 also matches by its display form (below).
 *    (In a predicate an unquoted name must also be an identifier, and
 *    `backquotes` quote too; see scan.h.)
 *  - A name selects the child with exactly that name; an unquoted name with
 *    no exact match selects the one child equal to it ignoring ASCII case.
 *    Two children matching either way is ambiguous (EINVAL), never the
 *    first of them.
 *  - A path steps through a struct by its fields' names, through a list,
 *    large_list or fixed_size_list by its element field's name
 *    (`items.item.price`), and through a map by its entries' key / value
 *    names (`m.key`, `m.value.x`: the entries struct is stepped implicitly).
 *  - An unknown name is ENOENT naming the name, where it was looked for and
 *    the closest existing field. */

/* The display form of a field name: the name with every byte that is not
 * part of valid UTF-8 written as the four characters \xNN. Arrow requires
 * UTF-8 names, so the file layer hands Arrow consumers this form (a file
 * written by another tool can hold any bytes), and the rule above also
 * selects such a field by it when no name matches the bytes themselves.
 * Writes at most cap bytes including the NUL, whole characters and escapes
 * only (buf may be NULL when cap is 0); returns the whole form's length,
 * which equals strlen(name) exactly when the name is valid UTF-8. */
QV_API size_t qv_field_name_display(const char *name, char *buf, size_t cap);

/* Longest path of child steps (a map's entries step counts). */
#define QV_FIELD_PATH_MAX 64

/* A resolved path: top-level column, then child indices below it (as in
 * qv_column_path, scan.h: a list's element is child 0, a map's entries
 * child 0 and their key / value children 0 / 1). */
struct qv_field_ref {
    int32_t column;
    int32_t depth;
    int32_t path[QV_FIELD_PATH_MAX];
    const struct qv_field *field; /* the selected field, in the schema given */
};

/* The rule's lookup in one struct: the index of the child `name` selects,
 * -1 when none does, -2 when several do (hits[] holds the first two,
 * *folded whether they matched ignoring case). */
QV_API int64_t qv_field_find_child(const struct qv_field *field, const char *name, bool quoted,
                                   int64_t hits[2], bool *folded);

/* A faster lookup with exactly qv_field_find_child's answers (an index over
 * a wide struct); it may also return -3 after setting an error. */
struct qv_field_lookup {
    int64_t (*find)(void *ctx, const struct qv_field *field, const char *name, bool quoted,
                    int64_t hits[2], bool *folded);
    void *ctx;
};

/* Splits `text` into its names: unescaped, NUL-terminated, written to `buf`
 * (cap >= strlen(text) + 1); names[i] point into it, quoted[i] says whether
 * name i was quoted; at most `max` names. EINVAL naming the text and the
 * position for an empty name, an unterminated quote or a stray quote. */
QV_API int qv_field_path_parse(const char *text, char *buf, size_t cap, const char **names,
                               bool *quoted, int32_t max, int32_t *n, struct qv_error *err);

/* Resolves names[0..n) against `root` (a STRUCT whose children are the
 * columns) by the rule above. With QV_PATH_STRUCTS_ONLY only struct steps
 * are allowed (predicates compare scalars reached through structs).
 * quoted may be NULL (every name quoted: exact matches only); lookup may be
 * NULL. Errors: ENOENT for an unknown name or a step into a field that has
 * no fields, EINVAL for an ambiguous name; messages without a prefix
 * ("no column 'x' (closest: 'y')", "struct 's' has no field 'b' ...",
 * "ambiguous column name 'a': fields 0 and 2 both have that name"). */
#define QV_PATH_STRUCTS_ONLY 1u
QV_API int qv_field_resolve_names(const struct qv_field *root, const char *const *names,
                                  const bool *quoted, int32_t n, unsigned flags,
                                  const struct qv_field_lookup *lookup, struct qv_field_ref *out,
                                  struct qv_error *err);
/* Parses and resolves one path text; messages are prefixed "column '<text>': ". */
QV_API int qv_field_resolve_path(const struct qv_field *root, const char *text,
                                 struct qv_field_ref *out, struct qv_error *err);

/* Number of fields in the subtree of `field`, itself included: the length
 * of a keep[] mask for qv_field_prune (and the number of a reader's nodes
 * the column occupies, format.h). */
QV_API int64_t qv_field_count(const struct qv_field *field);
/* A copy of `field` with only the fields marked in keep[] (one byte per
 * field of its subtree in pre-order, `field` itself at 0): a struct keeps
 * its marked children in schema order. keep[0] must be set and every marked
 * field's parent marked (else EINVAL). The copy points to the names,
 * metadata and time zones of `field`, which must outlive it; its nodes are
 * one block of *size bytes from `r` (qv_free(r, *out, *size)). */
QV_API int qv_field_prune(const struct qv_field *field, const uint8_t *keep,
                          struct qv_reservation *r, struct qv_field **out, size_t *size,
                          struct qv_error *err);
/* "int64", "decimal128", ...; "?" for an unknown value. */
QV_API const char *qv_type_name(enum qv_type type);

/* Printing. All three have snprintf semantics: they write at most `cap`
 * bytes including the terminator and return the length the full text needs,
 * so a caller can size a buffer with a first call (buf NULL, cap 0).
 * Non-printable bytes in names and metadata are escaped as \xNN.
 *   type:   "list<item: utf8>", "decimal128(10, 2)", "timestamp[us, UTC]"
 *   field:  "name: <type>[ not null][ {k: v, ...}]"
 *   schema: one line per top-level field, then "metadata: {k: v}" if any. */
QV_API size_t qv_type_to_string(const struct qv_field *field, char *buf, size_t cap);
QV_API size_t qv_field_to_string(const struct qv_field *field, char *buf, size_t cap);
QV_API size_t qv_schema_to_string(const struct qv_schema *schema, char *buf, size_t cap);

/* Arrow format strings, exactly per the C Data Interface spec.
 * Emit: writes the format of `field`'s own type (no children) with snprintf
 * semantics ("d:10,2", "tsu:UTC", "+w:3"). Parse: sets type and parameters of
 * `out` (type, precision, scale, byte_width, list_size, unit, timezone; the
 * timezone points into `format`, which must outlive its use); other members
 * are left untouched. EINVAL for a malformed string, ENOSYS for a valid Arrow
 * type Quiver does not support. */
QV_API size_t qv_arrow_format_emit(const struct qv_field *field, char *buf, size_t cap);
QV_API int qv_arrow_format_parse(const char *format, struct qv_field *out, struct qv_error *err);

/* ==== Import validation ====
 * CHEAP (the default) is O(number of nodes) and reads O(1) values per node:
 * released structs, buffer and child counts, non-negative length / offset /
 * null_count, required buffers present, child lengths covering the parent's
 * slots, the first and last offset of variable-length and list arrays in
 * bounds. FULL, for untrusted input, is O(data) and adds: every offset
 * monotone and in bounds, null_count equal to the bitmap's, UTF-8 of every
 * utf8 value, no null map keys, decimals within their precision.
 * Failure is EINVAL with a message naming the field path ("tags.item") and
 * the problem. ArrowArray carries no buffer sizes, so "in bounds" means
 * consistent with lengths, offsets and child lengths. */
enum qv_validate_level { QV_VALIDATE_CHEAP = 0, QV_VALIDATE_FULL = 1 };

QV_API int qv_arrow_array_validate(const struct ArrowArray *array, const struct qv_field *field,
                            enum qv_validate_level level, struct qv_error *err);
/* Validates `src` against `field` and moves it into `dst` (which must be
 * released). On failure nothing moves: the caller still owns `src`. */
QV_API int qv_arrow_array_import(struct ArrowArray *dst, struct ArrowArray *src,
                          const struct qv_field *field, enum qv_validate_level level,
                          struct qv_error *err);

/* Logical equality of two arrays of type `field` (offsets honoured, values
 * under nulls ignored, floats compared by bit pattern so NaN equals itself
 * and -0.0 differs from 0.0). Both must be valid (validate first). Returns
 * true when equal; otherwise writes the first difference ("field 'a' row 3:
 * 5 != 6") into `why` (snprintf semantics, may be NULL). */
QV_API bool qv_arrow_array_equal(const struct qv_field *field, const struct ArrowArray *a,
                          const struct ArrowArray *b, char *why, size_t why_cap);

/* ==== Owned arrays ====
 * An ArrowArray tree whose buffers are owned through a reservation: release
 * qv_free's every buffer it owns. The whole tree's control data (ArrowArray
 * structs, buffer tables, child pointers) is one allocation, shared by the
 * nodes with an atomic count, so a consumer may move children out and
 * release them in any order. This is how the builder exports batches and how
 * the reader builds arrays directly. */

/* Creates a tree shaped like `field` (n_buffers and n_children per type,
 * every length/null_count/offset 0, every buffer NULL). On success `out` owns
 * it; on failure out->release is NULL. `r` must outlive the array. */
QV_API int qv_owned_array_create(struct ArrowArray *out, const struct qv_field *field,
                          struct qv_reservation *r, struct qv_error *err);
/* Allocates `size` bytes from the tree's reservation as buffer `i` of `node`
 * (the root or any descendant still attached to an owned tree), freeing any
 * buffer the node owned there. Returns NULL with ENOMEM/EINVAL in err. */
QV_API void *qv_owned_array_alloc_buffer(struct ArrowArray *node, int64_t i, size_t size,
                                  struct qv_error *err);
/* Makes buffer `i` of `node` point to `ptr`, freeing any buffer the node
 * owned there. With owned_size > 0, ownership of a qv_alloc block of that
 * size from the tree's reservation moves to the node; with 0 the buffer is
 * borrowed (static data such as qv_arrow_zero_buffer). EINVAL for a node
 * that is not part of an owned tree or a bad index; ptr then stays the
 * caller's. */
QV_API int qv_owned_array_set_buffer(struct ArrowArray *node, int64_t i, void *ptr, size_t owned_size,
                              struct qv_error *err);

/* ==== Streams ====
 * A stream over producer callbacks. The wrapper keeps the last error message
 * for get_last_error, guarantees out->release == NULL on error and end of
 * stream, and refuses calls on a released stream. Arrays handed out by
 * get_next are independent of the stream: they outlive it. */
struct qv_arrow_stream_ops {
    /* Writes a fresh schema into `out` (owned by the consumer). */
    int (*get_schema)(void *ctx, struct ArrowSchema *out, struct qv_error *err);
    /* Writes the next batch into `out`, or leaves out->release NULL at end. */
    int (*get_next)(void *ctx, struct ArrowArray *out, struct qv_error *err);
    /* Frees ctx. */
    void (*release)(void *ctx);
};
/* On success `out` owns `ctx` (ops->release(ctx) runs when the stream is
 * released); on failure the caller keeps ctx and out->release is NULL.
 * `ops` is copied. The wrapper's state is allocated from `r`. */
QV_API int qv_arrow_stream_create(struct ArrowArrayStream *out, const struct qv_arrow_stream_ops *ops,
                           void *ctx, struct qv_reservation *r, struct qv_error *err);
/* A stream over batches already in memory. `schema` and the `n` arrays of
 * `batches` are validated (cheap tier) and, on success, moved into the
 * stream; on failure nothing moves. */
QV_API int qv_arrow_stream_from_batches(struct ArrowArrayStream *out, struct ArrowSchema *schema,
                                 struct ArrowArray *batches, int64_t n,
                                 struct qv_reservation *r, struct qv_error *err);

/* ==== The batch builder ====
 * Appends rows straight into Arrow buffers. Each column, and each nested
 * field below it, has an appender whose kind is resolved once from the
 * schema; the typed append functions below are inline fast paths (a kind
 * check, a capacity check, a store) that fall back to out-of-line code only
 * to grow a buffer, to report an error, or when the builder is poisoned.
 *
 * Row-at-a-time use: for every row, append exactly one value (or null) to
 * every column. Nested values:
 *   struct: qv_append_struct_begin(a); one value per child; qv_append_struct_end(a)
 *   list:   qv_append_list_begin(a); any number of values to the child
 *           (list_size for FIXED_LIST); qv_append_list_end(a)
 *   map:    qv_append_map_begin(a); pairs to qv_appender_map_keys(a) and
 *           qv_appender_map_values(a); qv_append_map_end(a)
 * A null struct gets a null (nullable) or default (non-nullable) value in
 * every child; a null list or map is empty.
 *
 * Errors and poisoning. Any failure (allocation, 32-bit offset overflow
 * (EOVERFLOW), a type mismatch, a null in a non-nullable field, a value out
 * of its decimal precision, unbalanced begin/end) poisons the builder: every
 * later append and finish fails with the same code until qv_builder_reset,
 * which drops the batch in progress. Nothing half-written is ever exported.
 * The per-value functions take no qv_error (they are the hot path); the
 * message is kept in the builder (qv_builder_error) and repeated by finish.
 *
 * Memory. Everything is allocated from the builder's reservation; there are
 * no allocations per row beyond the Arrow buffers themselves. Buffers start
 * at `initial_capacity` slots and double. See builder.c for how the next
 * batch's starting capacity is chosen (same-size batches never reallocate
 * after the first; one giant batch is not repeated).
 *
 * Threading: a builder is used by one thread at a time. */

struct qv_builder;

struct qv_builder_options {
    int64_t initial_capacity;   /* value slots a buffer starts with; 0 = 64 */
    int64_t initial_data_bytes; /* bytes a string/binary data buffer starts with;
                                   0 = 8 * initial_capacity */
    /* A buffer carried over to the next batch at its previous size is capped
     * at this many bytes unless the batch before needed as much too (a size
     * seen twice in a row is the workload, not an outlier). 0 = 4 MiB. */
    uint64_t carry_limit_bytes;
};

/* Appender kinds: the physical layout resolved at creation. */
enum qv__append_kind {
    QV__K_NULL = 0, QV__K_BOOL, QV__K_I8, QV__K_I16, QV__K_I32, QV__K_I64,
    QV__K_U8, QV__K_U16, QV__K_U32, QV__K_U64, QV__K_F16, QV__K_F32, QV__K_F64,
    QV__K_DEC, QV__K_VAR32, QV__K_VAR64, QV__K_FIXBIN, QV__K_STRUCT, QV__K_LIST32,
    QV__K_LIST64, QV__K_FIXLIST, QV__K_MAP
};

/* One appender. The first cache line holds everything the inline fast paths
 * of fixed-width and string values read (appenders are 64-byte aligned in
 * the builder's allocation); the second what the nested ones add. Treat every
 * member as read-only: only the builder changes them. */
#ifdef __cplusplus
#define QV__ALIGN64 alignas(64)
#else
#define QV__ALIGN64 _Alignas(64)
#endif
struct qv_appender {
    QV__ALIGN64 int32_t kind; /* enum qv__append_kind */
    int32_t width;         /* bytes per fixed-width value */
    uint8_t *values;       /* fixed-width values, bool bits, or offsets */
    uint8_t *validity;     /* NULL until this batch's first null here */
    uint8_t *data;         /* string/binary bytes */
    int64_t length;        /* slots appended in this batch */
    int64_t limit;         /* slots that fit without growing; 0 when poisoned */
    int64_t data_length;
    int64_t data_limit;    /* bytes that fit; <= INT32_MAX with 32-bit offsets */
    /* -- second line -- */
    int64_t dec_bound;     /* decimal: 10^precision for precision <= 18 */
    int64_t open_at;       /* first child's length at *_begin; -1 when closed */
    struct qv_appender *children;
    int64_t n_children;
    /* -- private to builder.c -- */
    struct qv_builder *builder;
    const struct qv_field *field;
    struct qv_appender *parent;
    int64_t capacity, data_capacity;       /* usable slots / bytes */
    size_t values_size, validity_size, data_size; /* allocation sizes */
    int64_t start_capacity, start_data;    /* for the next batch */
    int64_t prev_need, prev_data_need;     /* rounded needs of the batch before */
    int64_t null_count;
    bool nullable;
    bool top_level;
};

/* Creates a builder for `schema` (STRUCT root; deep-copied, the caller keeps
 * its own). All memory, including exported batches, comes from `r`, which
 * must outlive the builder and every batch it exported. `opts` may be NULL.
 * On success *out is owned by the caller (qv_builder_destroy). */
QV_API int qv_builder_create(const struct qv_schema *schema, struct qv_reservation *r,
                      const struct qv_builder_options *opts, struct qv_builder **out,
                      struct qv_error *err);
/* Frees the builder and the batch in progress. Exported batches stay valid.
 * NULL-safe. */
QV_API void qv_builder_destroy(struct qv_builder *b);
/* The builder's own copy of the schema; valid until qv_builder_destroy. */
QV_API const struct qv_schema *qv_builder_schema(const struct qv_builder *b);
QV_API int64_t qv_builder_num_columns(const struct qv_builder *b);
/* Rows in the batch in progress (the first column's length; for a schema
 * without columns, the rows appended with qv_builder_append_batch). */
QV_API int64_t qv_builder_num_rows(const struct qv_builder *b);
/* Appender of top-level column `k`, NULL when out of range. Resolve once and
 * keep: it stays valid for the builder's life. */
QV_API struct qv_appender *qv_builder_column(struct qv_builder *b, int64_t k);
/* Child `i` of a struct/list/map appender, NULL when out of range. */
QV_API struct qv_appender *qv_appender_child(struct qv_appender *a, int64_t i);
QV_API struct qv_appender *qv_appender_map_keys(struct qv_appender *map);
QV_API struct qv_appender *qv_appender_map_values(struct qv_appender *map);
static inline const struct qv_field *qv_appender_field(const struct qv_appender *a) {
    return a->field;
}

/* Exports the builder's schema (the schema of every batch); `out` is owned
 * by the caller on success, released on failure. Batches do not carry it. */
QV_API int qv_builder_export_schema(struct qv_builder *b, struct ArrowSchema *out,
                             struct qv_error *err);
/* Moves the batch in progress out as a STRUCT ArrowArray of the columns and
 * starts an empty batch. On success `out` owns the batch (its release frees
 * through the builder's reservation and does not need the builder). On
 * failure (poisoned, columns of different lengths, a begin without end,
 * allocation) out->release is NULL, the batch stays in the builder and the
 * builder is poisoned. */
QV_API int qv_builder_finish(struct qv_builder *b, struct ArrowArray *out, struct qv_error *err);
/* Drops the batch in progress and clears poisoning. */
QV_API void qv_builder_reset(struct qv_builder *b);
/* The error that poisoned the builder (code 0 when healthy). */
QV_API const struct qv_error *qv_builder_error(const struct qv_builder *b);

/* Bulk: appends rows [start, start + count) of `src` (an array of the
 * appender's type; its own `offset` honoured) to the appender. Buffers are
 * copied verbatim apart from offsets, which are rebased; `src` stays owned
 * by the caller. `src` is validated at the cheap tier first, and every
 * offset read is checked, so a bad `src` is an error, not a bad batch. */
QV_API int qv_append_array(struct qv_appender *a, const struct ArrowArray *src, int64_t start,
                    int64_t count);
/* Bulk for whole rows: `src` is a STRUCT array with the builder's schema
 * (no null rows at the top level); rows [start, start + count) go to every
 * column. On failure the builder is poisoned and err says why. */
QV_API int qv_builder_append_batch(struct qv_builder *b, const struct ArrowArray *src, int64_t start,
                            int64_t count, struct qv_error *err);

/* ---- per-value appends: 0 or an errno (the builder is then poisoned) ---- */

QV_API int qv_append_null(struct qv_appender *a);
/* Half-precision value given as its IEEE 754 binary16 bits. */
QV_API int qv_append_float16(struct qv_appender *a, uint16_t bits);
/* Unscaled decimal128 value as two's complement halves (value = hi*2^64 + lo). */
QV_API int qv_append_decimal128(struct qv_appender *a, uint64_t lo, int64_t hi);

/* The out-of-line halves of the inline appends below: exported because those
 * inline functions call them from the user's code, but not for direct use
 * (the qv__ prefix says so; their contract is the inline callers'). */
QV_API int qv__append_begin_slow(struct qv_appender *a, int32_t kind);
QV_API int qv__append_list_end_slow(struct qv_appender *a);
QV_API int qv__append_map_end_slow(struct qv_appender *a);
QV_API int qv__append_struct_end_slow(struct qv_appender *a);
QV_API int qv__append_fixed_slow(struct qv_appender *a, int32_t kind, const void *value);
QV_API int qv__append_bytes_slow(struct qv_appender *a, const void *p, size_t n);
QV_API int qv__append_fixbin_slow(struct qv_appender *a, const void *p, size_t n);

#if defined(__GNUC__)
#define QV__LIKELY(x) __builtin_expect(!!(x), 1)
#else
#define QV__LIKELY(x) (x)
#endif

/* The fixed-width fast path: one kind compare, one capacity compare, a
 * store, and a validity bit only once the batch has seen a null here. */
#define QV__APPEND_FIXED(a, K, T, v)                                   \
    do {                                                               \
        if (QV__LIKELY((a)->kind == (K) && (a)->length < (a)->limit)) { \
            ((T *)(void *)(a)->values)[(a)->length] = (v);             \
            if ((a)->validity) qv_bit_set((a)->validity, (a)->length); \
            (a)->length++;                                             \
            return 0;                                                  \
        }                                                              \
        T v_ = (v);                                                    \
        return qv__append_fixed_slow((a), (K), &v_);                   \
    } while (0)

static inline int qv_append_int8(struct qv_appender *a, int8_t v) { QV__APPEND_FIXED(a, QV__K_I8, int8_t, v); }
static inline int qv_append_int16(struct qv_appender *a, int16_t v) { QV__APPEND_FIXED(a, QV__K_I16, int16_t, v); }
/* INT32 and DATE32 columns. */
static inline int qv_append_int32(struct qv_appender *a, int32_t v) { QV__APPEND_FIXED(a, QV__K_I32, int32_t, v); }
/* INT64 and TIMESTAMP columns. */
static inline int qv_append_int64(struct qv_appender *a, int64_t v) { QV__APPEND_FIXED(a, QV__K_I64, int64_t, v); }
static inline int qv_append_uint8(struct qv_appender *a, uint8_t v) { QV__APPEND_FIXED(a, QV__K_U8, uint8_t, v); }
static inline int qv_append_uint16(struct qv_appender *a, uint16_t v) { QV__APPEND_FIXED(a, QV__K_U16, uint16_t, v); }
static inline int qv_append_uint32(struct qv_appender *a, uint32_t v) { QV__APPEND_FIXED(a, QV__K_U32, uint32_t, v); }
static inline int qv_append_uint64(struct qv_appender *a, uint64_t v) { QV__APPEND_FIXED(a, QV__K_U64, uint64_t, v); }
static inline int qv_append_float32(struct qv_appender *a, float v) { QV__APPEND_FIXED(a, QV__K_F32, float, v); }
static inline int qv_append_float64(struct qv_appender *a, double v) { QV__APPEND_FIXED(a, QV__K_F64, double, v); }
static inline int qv_append_date32(struct qv_appender *a, int32_t days) { return qv_append_int32(a, days); }
static inline int qv_append_timestamp(struct qv_appender *a, int64_t t) { return qv_append_int64(a, t); }

/* Bool values live in a bitmap kept zeroed past `length`, so true sets a
 * bit and false writes nothing. */
static inline int qv_append_bool(struct qv_appender *a, bool v) {
    if (QV__LIKELY(a->kind == QV__K_BOOL && a->length < a->limit)) {
        if (v) qv_bit_set(a->values, a->length);
        if (a->validity) qv_bit_set(a->validity, a->length);
        a->length++;
        return 0;
    }
    uint8_t v_ = v ? 1 : 0;
    return qv__append_fixed_slow(a, QV__K_BOOL, &v_);
}

/* Decimal of any precision from an unscaled int64 (a precision <= 18 value
 * always fits one); written as the 16-byte little-endian two's complement
 * with the sign extended, no wider intermediate. EINVAL when |v| needs more
 * digits than the precision. */
static inline int qv_append_decimal64(struct qv_appender *a, int64_t v) {
    if (QV__LIKELY(a->kind == QV__K_DEC && a->length < a->limit && v < a->dec_bound &&
                   v > -a->dec_bound)) {
        int64_t *slot = (int64_t *)(void *)(a->values + a->length * 16);
        slot[0] = v;
        slot[1] = v >> 63;
        if (a->validity) qv_bit_set(a->validity, a->length);
        a->length++;
        return 0;
    }
    return qv_append_decimal128(a, (uint64_t)v, v >> 63);
}

/* Copies n bytes; short values (most strings) without a call into libc,
 * reading and writing only [0, n). Part of the inline string append, not for
 * direct use; static inline, so it is no symbol of the library. */
static inline void qv__copy_bytes(uint8_t *dst, const void *src, size_t n) {
    const uint8_t *s = (const uint8_t *)src;
    if (n > 16) {
        memcpy(dst, s, n);
    } else if (n >= 8) {
        uint64_t x, y;
        memcpy(&x, s, 8);
        memcpy(&y, s + n - 8, 8);
        memcpy(dst, &x, 8);
        memcpy(dst + n - 8, &y, 8);
    } else if (n >= 4) {
        uint32_t x, y;
        memcpy(&x, s, 4);
        memcpy(&y, s + n - 4, 4);
        memcpy(dst, &x, 4);
        memcpy(dst + n - 4, &y, 4);
    } else if (n > 0) {
        dst[0] = s[0];
        dst[n / 2] = s[n / 2];
        dst[n - 1] = s[n - 1];
    }
}

/* String and binary values (utf8, binary and their large variants; UTF-8 is
 * not checked here). The bytes are copied once, into the data buffer. */
static inline int qv_append_binary(struct qv_appender *a, const void *p, size_t n) {
    if (QV__LIKELY(a->kind == QV__K_VAR32 && a->length < a->limit &&
                   n <= (uint64_t)(a->data_limit - a->data_length))) {
        qv__copy_bytes(a->data + a->data_length, p, n);
        a->data_length += (int64_t)n;
        ((int32_t *)(void *)a->values)[a->length + 1] = (int32_t)a->data_length;
        if (a->validity) qv_bit_set(a->validity, a->length);
        a->length++;
        return 0;
    }
    return qv__append_bytes_slow(a, p, n);
}
static inline int qv_append_string(struct qv_appender *a, const char *s, size_t n) {
    return qv_append_binary(a, s, n);
}
/* FIXED_BINARY: n must equal the byte width. */
static inline int qv_append_fixed_binary(struct qv_appender *a, const void *p, size_t n) {
    if (QV__LIKELY(a->kind == QV__K_FIXBIN && a->length < a->limit && n == (size_t)a->width)) {
        if (n) memcpy(a->values + a->length * (int64_t)n, p, n);
        if (a->validity) qv_bit_set(a->validity, a->length);
        a->length++;
        return 0;
    }
    return qv__append_fixbin_slow(a, p, n);
}

/* Nested values. begin reserves the (valid) slot and remembers where the
 * children stand; end checks the children and, for lists and maps, writes
 * the slot's end offset. The fast paths cover struct, list and map; large
 * and fixed-size lists take the out-of-line path. */
static inline int qv__append_begin(struct qv_appender *a, int32_t kind) {
    if (QV__LIKELY(a->kind == kind && a->open_at < 0 && a->length < a->limit)) {
        if (a->validity) qv_bit_set(a->validity, a->length);
        a->open_at = kind == QV__K_STRUCT ? 0 : a->children[0].length;
        a->length++;
        return 0;
    }
    return qv__append_begin_slow(a, kind);
}
static inline int qv_append_struct_begin(struct qv_appender *a) {
    return qv__append_begin(a, QV__K_STRUCT);
}
/* Any list kind; only 32-bit offset lists take the inline path. */
static inline int qv_append_list_begin(struct qv_appender *a) {
    return qv__append_begin(a, QV__K_LIST32);
}
static inline int qv_append_map_begin(struct qv_appender *a) {
    return qv__append_begin(a, QV__K_MAP);
}

/* A poisoned builder has limit 0, which an open slot never has otherwise. */
static inline int qv_append_struct_end(struct qv_appender *a) {
    if (QV__LIKELY(a->kind == QV__K_STRUCT && a->open_at >= 0 && a->limit > 0)) {
        for (int64_t c = 0; c < a->n_children; c++)
            if (a->children[c].length != a->length) return qv__append_struct_end_slow(a);
        a->open_at = -1;
        return 0;
    }
    return qv__append_struct_end_slow(a);
}
static inline int qv_append_list_end(struct qv_appender *a) {
    if (QV__LIKELY(a->kind == QV__K_LIST32 && a->open_at >= 0 && a->limit > 0 &&
                   a->children[0].length <= INT32_MAX)) {
        ((int32_t *)(void *)a->values)[a->length] = (int32_t)a->children[0].length;
        a->open_at = -1;
        return 0;
    }
    return qv__append_list_end_slow(a);
}
static inline int qv_append_map_end(struct qv_appender *a) {
    if (QV__LIKELY(a->kind == QV__K_MAP && a->open_at >= 0 && a->limit > 0)) {
        struct qv_appender *entries = &a->children[0];
        int64_t n = entries->children[0].length;
        if (QV__LIKELY(n == entries->children[1].length && n <= INT32_MAX)) {
            /* The entries struct is never null and has no buffers: its
             * length follows the keys. */
            entries->length = n;
            ((int32_t *)(void *)a->values)[a->length] = (int32_t)n;
            a->open_at = -1;
            return 0;
        }
    }
    return qv__append_map_end_slow(a);
}

#ifdef __cplusplus
}
#endif
#endif /* QUIVER_ARROW_H */
