/*
 * Limits shared by more than one part of the library, defined once. The
 * format's own limits (footer size, field count, name length) live in
 * format/format_internal.h; a limit that the Arrow layer must enforce too
 * lives here, below both, so the two cannot drift apart.
 */
#ifndef QV_BASE_LIMITS_H
#define QV_BASE_LIMITS_H

/* Schema nesting: levels below the root struct, a top-level column being at
 * level 1 (the root at 0). 63 is the deepest Arrow C++ (and so pyarrow)
 * imports through the C Data Interface: its ArrowSchema recursion limit of
 * 64 counts the root. docs/format.md ("Limits of the format") states it;
 * the Arrow layer refuses deeper schemas when they are created or imported,
 * the writer before it writes, the reader as corruption. Not the depth of
 * an encoding tree (QV__ENC_MAX_DEPTH, encoding/enc_internal.h). */
#define QV__MAX_NESTING 63

#endif
