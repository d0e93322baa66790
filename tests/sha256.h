/*
 * SHA-256 (FIPS 180-4) for the tests that check code-signature page hashes;
 * the product has no use for it.
 */
#ifndef SW_TEST_SHA256_H
#define SW_TEST_SHA256_H

#include <stddef.h>
#include <stdint.h>

void sw_test_sha256(const void *data, size_t len, uint8_t digest[32]);

#endif
