/*
 * Test knobs of the encoding part. Not public, not exported from
 * libquiver.so; the C tests and fuzz targets include this header through
 * the core/src include directory and link the static library.
 */
#ifndef QV_ENCODING_TESTING_H
#define QV_ENCODING_TESTING_H

/* Forces the entropy stage's frame layout (entropy.c) for every encode in
 * the process from now on: 1 bit-packed at the values' own width, 2
 * bit-packed at whole bytes (8, 16 or 32 bits), 3 sequential plain
 * residuals of 8 or 16 bits (for(residuals=plain) at a narrower type,
 * format 4.0), 4 ans frames over sequential residuals of 8 bits (format
 * 5.0; only where the range is at most 8 bits and ans is allowed), 5
 * sequential bits, seqpack residuals of 1, 2 or 4 bits (format 8.0; only
 * where the range is at most 4 bits); 0 restores the sample's choice. While a layout is forced,
 * the cascade builds the entropy stage, without comparing it with the
 * other candidates, for every integer node it can hold: at least 1,024
 * values, a frame-of-reference range of 1 to 32 bits (1 to 16 for the
 * sequential layout), zstd allowed, not compact mode. Not thread-safe
 * against encodes running at the time of the call. */
void qv_encode_force_entropy_layout(int layout);

/* Forces bucket's mantissa bits m (0..3, docs/format.md 5.5.18) for every
 * bucket node built in the process from now on, where the node's width
 * allows that m (elsewhere the sample's choice stands); -1 restores the
 * sample's choice. Not thread-safe against encodes running at the time. */
void qv_encode_force_bucket_m(int m);

#endif /* QV_ENCODING_TESTING_H */
