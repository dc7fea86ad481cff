/*
 * decode_budget.h — what decoding one request may allocate, whatever its
 * wire format: protobuf-c's decoder (call.c) and the JSON request reader
 * (json_request.c) both allocate through a budget, so a message of millions
 * of tiny elements is refused (message_too_large) instead of taking many
 * times its size in memory. Blocks come from malloc, so what was decoded is
 * freed the usual way (protobuf_c_message_free_unpacked(m, NULL)).
 */
#ifndef LMSCORED_DECODE_BUDGET_H
#define LMSCORED_DECODE_BUDGET_H

#include <protobuf-c/protobuf-c.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
    int64_t used, limit;
    bool exceeded;
} decode_budget;

/* The budget of one request when messages may be max_message_bytes:
 * 8 times that, at least 64 MiB. protobuf-c gives every element its own
 * struct, so a message of tiny items decodes to up to ~32 times its size; a
 * legitimate one needs at most ~4 times (token ids of one byte each become
 * int32s). */
int64_t decode_budget_limit(int64_t max_message_bytes);

void decode_budget_init(decode_budget *b, int64_t limit);
/* malloc(size) when the budget has room; else NULL and b->exceeded. */
void *decode_budget_alloc(decode_budget *b, size_t size);
/* realloc(p, new_size) of a block of old_size bytes, within the budget. */
void *decode_budget_realloc(decode_budget *b, void *p, size_t old_size, size_t new_size);
/* The budget as protobuf-c's allocator. */
ProtobufCAllocator decode_budget_allocator(decode_budget *b);

#endif
