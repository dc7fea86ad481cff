/*
 * fuzz_safetensors.c — libFuzzer target for the safetensors reader: parses
 * the input with safetensors_open_memory and, when it is accepted, touches
 * the first and last byte of every tensor and looks each one up by name,
 * so ASan sees any range the reader let through outside the input.
 */
#include <stdint.h>

#include "safetensors.h"

static volatile unsigned char sink;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    safetensors_file *f;
    lms_error err;
    if (safetensors_open_memory(data, size, &f, &err) != LMS_OK) return 0;
    for (size_t i = 0; i < safetensors_tensor_count(f); i++) {
        const safetensors_tensor *t = safetensors_tensor_at(f, i);
        if (t->n_bytes) {
            const unsigned char *bytes = t->data;
            sink ^= bytes[0] ^ bytes[t->n_bytes - 1];
        }
        if (safetensors_find_tensor(f, t->name) != t) __builtin_trap(); /* names are unique */
    }
    safetensors_close(f);
    return 0;
}
