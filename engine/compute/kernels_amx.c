/*
 * kernels_amx.c — the amx tier's kernels (kernels_amx.h) on AMX's tile
 * instructions (tile.h with TILE_INTRINSICS). Compiled with AMX-TILE,
 * AMX-BF16 and AMX-INT8 enabled for this file only; tier.c offers the tier
 * only where the CPU has them, Linux grants the tile state and the
 * start-up self-check matched the emulation.
 */
#define TILE_INTRINSICS
#include "kernels_amx.h"

DEFINE_AMX_BLOCK(matmul_amx)
