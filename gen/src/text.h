/* Pseudo-text for TPC-H comment columns (see text.c). */
#ifndef QVGEN_TEXT_H
#define QVGEN_TEXT_H

#include <stddef.h>
#include <stdint.h>

/* Writes exactly `len` characters (len < cap) of grammar-generated text
 * determined by `seed` into buf, NUL-terminated. Returns len. */
size_t qvgen__text_generate(uint64_t seed, size_t len, char *buf, size_t cap);

#endif
