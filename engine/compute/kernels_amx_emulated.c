/*
 * kernels_amx_emulated.c — the amx tier's kernels (kernels_amx.h) on the
 * tile layer's emulation (tile_emulated.c): the amx-emulated tier, which
 * auto never picks and every CPU's tests run, and the reference the amx
 * tier proves itself against at start-up (tier.c). Also the BF16 panel
 * order both amx tiers pack (kernels_amx.h).
 */
#include "kernels_amx.h"

size_t amx_bf16_at(int32_t k, int32_t kk, int32_t j)
{
    const int32_t paired = k & ~1;
    if (kk >= paired) return (size_t)paired * LMS_PANEL + (size_t)j; /* odd k: the last value */
    return (size_t)(kk / 2) * 2 * LMS_PANEL + 2 * (size_t)j + (size_t)(kk & 1);
}

DEFINE_AMX_BLOCK(matmul_amx_emulated)
