/*
 * SHA-256 (FIPS 180-4, identical to FIPS 180-2 for this function), written
 * here so that the golden files' dataset hashes do not depend on any crypto
 * library.  Streaming interface plus a one-shot helper.
 */
#ifndef VOLTGATE_GOLDEN_SHA256_H
#define VOLTGATE_GOLDEN_SHA256_H

#include <stddef.h>
#include <stdint.h>

typedef struct vg_sha256_ctx {
    uint32_t h[8];
    uint64_t total_bytes;
    uint8_t block[64];
    size_t used;         /* bytes waiting in block[] */
} vg_sha256_ctx;

void vg_sha256_init(vg_sha256_ctx *c);
void vg_sha256_update(vg_sha256_ctx *c, const void *data, size_t len);
void vg_sha256_final(vg_sha256_ctx *c, uint8_t digest[32]);

/* digest of data[0..len) */
void vg_sha256(const void *data, size_t len, uint8_t digest[32]);
/* the same as 64 lowercase hex digits plus a NUL */
void vg_sha256_hex(const void *data, size_t len, char hex[65]);
void vg_sha256_to_hex(const uint8_t digest[32], char hex[65]);

#endif
