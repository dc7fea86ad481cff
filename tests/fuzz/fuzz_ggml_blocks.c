/*
 * fuzz_ggml_blocks.c — libFuzzer target for the decoders of ggml's block
 * formats (ggml_blocks.c), through the loader's conversion
 * (lms_convert_to_f32). The first input byte picks the type (or
 * LMSCORE_FUZZ_BLOCK_TYPE=q4_K pins one, for runs per type); the rest,
 * copied to a buffer of exactly its size, is decoded as whole blocks, so
 * ASan sees any read past them and UBSan any undefined shift or
 * conversion. Decoding block by block must give the bits of decoding the
 * run at once.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggml_blocks.h"
#include "tensor_convert.h"

static const lms_dtype BLOCK_TYPES[] = {LMS_DTYPE_Q4_0, LMS_DTYPE_Q4_1, LMS_DTYPE_Q5_0,
                                        LMS_DTYPE_Q5_1, LMS_DTYPE_Q8_0, LMS_DTYPE_Q4_K,
                                        LMS_DTYPE_Q5_K, LMS_DTYPE_Q6_K};
#define N_BLOCK_TYPES (sizeof BLOCK_TYPES / sizeof BLOCK_TYPES[0])

static int pinned = -1; /* index into BLOCK_TYPES, or -1: the first byte picks */

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    const char *name = getenv("LMSCORE_FUZZ_BLOCK_TYPE");
    if (!name) return 0;
    for (size_t i = 0; i < N_BLOCK_TYPES; i++)
        if (strcmp(name, lms_dtype_name(BLOCK_TYPES[i])) == 0) pinned = (int)i;
    if (pinned < 0) {
        fprintf(stderr, "LMSCORE_FUZZ_BLOCK_TYPE=%s is not a block type\n", name);
        abort();
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (pinned < 0 && size == 0) return 0;
    const lms_dtype type = pinned >= 0 ? BLOCK_TYPES[pinned] : BLOCK_TYPES[data[0] % N_BLOCK_TYPES];
    if (pinned < 0) {
        data++;
        size--;
    }
    const size_t bytes = lms_dtype_block_bytes(type), elements = lms_dtype_block_elements(type);
    const size_t n_blocks = size / bytes;
    if (n_blocks == 0) return 0;
    unsigned char *blocks = malloc(n_blocks * bytes);
    float *whole = malloc(n_blocks * elements * sizeof *whole);
    float *one = malloc(elements * sizeof *one);
    if (!blocks || !whole || !one) abort();
    memcpy(blocks, data, n_blocks * bytes);
    lms_error err;
    const lms_convert_job job = {type, blocks, whole, n_blocks * elements};
    if (lms_convert_to_f32(&job, 1, NULL, &err) != LMS_OK) abort();
    for (size_t b = 0; b < n_blocks; b++) {
        lms_ggml_blocks_to_f32(type, blocks + b * bytes, 1, one);
        if (memcmp(one, whole + b * elements, elements * sizeof *one) != 0) __builtin_trap();
    }
    free(blocks);
    free(whole);
    free(one);
    return 0;
}
