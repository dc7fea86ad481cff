/*
 * decode_budget.c — malloc within a budget (see decode_budget.h).
 */
#include "decode_budget.h"

#include <stdlib.h>

/* What malloc keeps for each block besides its size. */
#define BLOCK_OVERHEAD 16

int64_t decode_budget_limit(int64_t max_message_bytes)
{
    const int64_t floor = (int64_t)64 << 20;
    return max_message_bytes > floor / 8 ? max_message_bytes * 8 : floor;
}

void decode_budget_init(decode_budget *b, int64_t limit)
{
    b->used = 0;
    b->limit = limit;
    b->exceeded = false;
}

static bool take(decode_budget *b, int64_t bytes)
{
    if (b->used + bytes > b->limit) {
        b->exceeded = true;
        return false;
    }
    b->used += bytes;
    return true;
}

void *decode_budget_alloc(decode_budget *b, size_t size)
{
    return take(b, (int64_t)size + BLOCK_OVERHEAD) ? malloc(size) : NULL;
}

void *decode_budget_realloc(decode_budget *b, void *p, size_t old_size, size_t new_size)
{
    if (new_size > old_size && !take(b, (int64_t)(new_size - old_size) + (p ? 0 : BLOCK_OVERHEAD)))
        return NULL;
    return realloc(p, new_size);
}

static void *budget_alloc(void *data, size_t size)
{
    return decode_budget_alloc(data, size);
}

static void budget_free(void *data, void *p)
{
    (void)data;
    free(p);
}

ProtobufCAllocator decode_budget_allocator(decode_budget *b)
{
    return (ProtobufCAllocator){budget_alloc, budget_free, b};
}
