/*
 * tile_emulated.c — the tile layer (tile.h) in plain C: eight tile
 * registers per thread and the instructions as the Intel SDM's pseudo-code
 * (vol. 2, TDPBF16PS, TDPBSSD/TDPBSUD/TDPBUSD; LDTILECFG, TILELOADD, TILESTORED,
 * TILEZERO) defines them, so that a kernel written against tile.h computes
 * here exactly what it computes on AMX.
 *
 * TDPBF16PS, as the SDM's Operation section gives it (the intrinsics
 * guide's shorter form, one chain over both elements of a pair, is not
 * what the SDM says): per row m of C, two f32 temporaries per output
 * column n, the even and the odd element of each bf16 pair, each starting
 * at 0 and accumulated over k in order with one fused multiply-add per
 * pair ("FP32 FMA with DAZ=FTZ=1, RNE rounding"); then
 * C[m][n] = C[m][n] + (even + odd), each add with DAZ and FTZ, RNE. DAZ:
 * a bf16 input whose exponent is 0 counts as a zero of its sign. FTZ: a
 * result that is subnormal after rounding becomes a zero of its sign.
 * MXCSR is neither read nor written (fmaf and + round to nearest even, the
 * engine never changes the rounding mode). The product of two bf16 values
 * is exact in f32 (8 + 8 significant bits), so fmaf's single rounding is
 * the instruction's. Whether a given CPU computes exactly this is what the
 * start-up self-check (tier.c) verifies before the amx tier is offered.
 *
 * TDPBSSD/TDPBSUD/TDPBUSD: per row m, column n, C[m][n] += Σ over k of
 * the four byte products of A's dword k and B's row k dword n (DPBD), in
 * 32 bits with wrap-around (no saturation); each byte sign-extended or
 * zero-extended as the mnemonic's letters say, A's first (tsrc1, the
 * instruction's second operand), B's second (tsrc2): SSD both signed, SUD
 * A signed and B unsigned, USD A unsigned and B signed.
 */
#include "tile.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static _Thread_local struct {
    bool configured;
    tile_config cfg;
    uint8_t data[TILE_COUNT][TILE_MAX_ROWS][TILE_MAX_COLSB];
} tiles;

/* A use that would fault (#UD) on the hardware: a bug in the kernel. */
static void fault(void)
{
    abort();
}

static void check_tile(int t)
{
    if (!tiles.configured || t < 0 || t >= TILE_COUNT || !tiles.cfg.rows[t] || !tiles.cfg.colsb[t])
        fault();
}

void tile_emu_configure(const tile_config *cfg)
{
    if (cfg->palette != 1 || cfg->start_row != 0) fault();
    for (int t = 0; t < 16; t++) {
        const bool used = t < TILE_COUNT;
        if (cfg->rows[t] > (used ? TILE_MAX_ROWS : 0) ||
            cfg->colsb[t] > (used ? TILE_MAX_COLSB : 0))
            fault();
        if (!cfg->rows[t] != !cfg->colsb[t]) fault();
    }
    tiles.cfg = *cfg;
    tiles.configured = true;
    memset(tiles.data, 0, sizeof tiles.data);
}

void tile_emu_release(void)
{
    tiles.configured = false;
    memset(tiles.data, 0, sizeof tiles.data);
}

void tile_emu_load(int t, const void *base, size_t stride)
{
    check_tile(t);
    memset(tiles.data[t], 0, sizeof tiles.data[t]);
    for (int r = 0; r < tiles.cfg.rows[t]; r++)
        memcpy(tiles.data[t][r], (const uint8_t *)base + (size_t)r * stride, tiles.cfg.colsb[t]);
}

void tile_emu_store(int t, void *base, size_t stride)
{
    check_tile(t);
    for (int r = 0; r < tiles.cfg.rows[t]; r++)
        memcpy((uint8_t *)base + (size_t)r * stride, tiles.data[t][r], tiles.cfg.colsb[t]);
}

void tile_emu_zero(int t)
{
    check_tile(t);
    memset(tiles.data[t], 0, sizeof tiles.data[t]);
}

/* The shapes a dot product needs (else #UD): C is rows(A) × colsb(B), B
 * has one row per dword of A's rows; the three tiles distinct. */
static void check_product(int c, int a, int b)
{
    check_tile(c);
    check_tile(a);
    check_tile(b);
    const tile_config *k = &tiles.cfg;
    if (c == a || c == b || a == b || k->colsb[c] != k->colsb[b] || k->rows[c] != k->rows[a] ||
        k->colsb[a] % 4 || k->colsb[c] % 4 || k->colsb[a] / 4 != k->rows[b])
        fault();
}

/* The inner loops of the instructions, and the helpers they inline, read
 * and write only the fixed-size arrays they are given, within the tile
 * shapes check_product allowed: they are left out of the sanitizers'
 * instrumentation, which kept them from being vectorised (or the helpers
 * inlined) and made the amx-emulated tests of a sanitizer build take
 * minutes. */
#define EMULATION_LOOP __attribute__((no_sanitize("address", "undefined")))
/* The same for a loop compiled again for a wider instruction set where the
 * CPU has it. clang refuses target_clones beside no_sanitize: there the
 * clones stay and the sanitizers with them (the only sanitized clang build
 * is the fuzz tree, where the emulation's speed does not matter). */
#if defined(__clang__)
#define EMULATION_CLONED_LOOP(...) __attribute__((target_clones(__VA_ARGS__)))
#else
#define EMULATION_CLONED_LOOP(...) EMULATION_LOOP __attribute__((target_clones(__VA_ARGS__)))
#endif

EMULATION_LOOP static float bits_f32(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* A bf16 input with DAZ (exponent 0: a zero of its sign), as f32. */
EMULATION_LOOP static float bf16_daz(const uint8_t *p)
{
    uint16_t h;
    memcpy(&h, p, sizeof h);
    if (!(h & 0x7F80)) h &= 0x8000;
    return bits_f32((uint32_t)h << 16);
}

/* An f32 input with DAZ, or a result with FTZ. */
EMULATION_LOOP static inline float flush(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return (u & 0x7F800000) ? x : bits_f32(u & 0x80000000);
}

/* The SDM's loop for one TDPBF16PS over c, a and b's tile bytes, A and B
 * widened to f32 once. Compiled again for FMA where the CPU has it (the
 * emulation runs every test of the amx-emulated tier; fmaf's call would
 * dominate). */
EMULATION_CLONED_LOOP("fma", "default")
static void dpbf16ps_rows(uint8_t c[TILE_MAX_ROWS][TILE_MAX_COLSB],
                          const uint8_t a[TILE_MAX_ROWS][TILE_MAX_COLSB],
                          const uint8_t b[TILE_MAX_ROWS][TILE_MAX_COLSB], int rows, int cols,
                          int pairs)
{
    float fa[TILE_MAX_ROWS][TILE_MAX_COLSB / 2], fb[TILE_MAX_ROWS][TILE_MAX_COLSB / 2];
    float fc[TILE_MAX_ROWS][TILE_MAX_COLSB / 4];
    for (int r = 0; r < TILE_MAX_ROWS; r++)
        for (int i = 0; i < TILE_MAX_COLSB / 2; i++) {
            fa[r][i] = bf16_daz(a[r] + 2 * i);
            fb[r][i] = bf16_daz(b[r] + 2 * i);
        }
    memcpy(fc, c, sizeof fc);
    for (int m = 0; m < rows; m++) {
        float temp[TILE_MAX_COLSB / 2] = {0}; /* [2n + e]: column n, element e of the pairs */
        for (int k = 0; k < pairs; k++)
            for (int i = 0; i < 2 * cols; i++)
                temp[i] = flush(fmaf(fa[m][2 * k + i % 2], fb[k][i], temp[i]));
        for (int n = 0; n < cols; n++)
            fc[m][n] = flush(flush(fc[m][n]) + flush(temp[2 * n] + temp[2 * n + 1]));
    }
    for (int m = 0; m < rows; m++)
        memcpy(c[m], fc[m], (size_t)cols * sizeof *fc[m]);
}

void tile_emu_dpbf16ps(int c, int a, int b)
{
    check_product(c, a, b);
    dpbf16ps_rows(tiles.data[c], tiles.data[a], tiles.data[b], tiles.cfg.rows[c],
                  tiles.cfg.colsb[c] / 4, tiles.cfg.colsb[a] / 4);
}

/* The SDM's loop for one TDPBSSD/TDPBSUD/TDPBUSD over a, b and c's tile
 * bytes: A widened to int32 and B widened and transposed (bt[4k + i][n] =
 * B[k][4n + i]), each sign- or zero-extended, held unsigned (the products
 * and sums mod 2^32 are the signed ones'), then all 16 columns summed
 * (those past C's width are zeros and not stored back). The sums wrap in
 * 32 bits, which makes their order immaterial. Compiled again for AVX2
 * where the CPU has it (the emulation runs every test of the amx-emulated
 * tier). */
EMULATION_CLONED_LOOP("avx2", "default")
static void dp_int8_rows(uint8_t c[TILE_MAX_ROWS][TILE_MAX_COLSB],
                         const uint8_t a[TILE_MAX_ROWS][TILE_MAX_COLSB],
                         const uint8_t b[TILE_MAX_ROWS][TILE_MAX_COLSB], bool a_signed,
                         bool b_signed, int rows, int cols, int quads)
{
    uint32_t wa[TILE_MAX_ROWS][TILE_MAX_COLSB], bt[TILE_MAX_COLSB][TILE_MAX_COLSB / 4];
    uint32_t acc[TILE_MAX_ROWS][TILE_MAX_COLSB / 4];
    for (int r = 0; r < TILE_MAX_ROWS; r++)
        for (int i = 0; i < TILE_MAX_COLSB; i++) {
            wa[r][i] = a_signed ? (uint32_t)(int8_t)a[r][i] : a[r][i];
            bt[4 * r + i % 4][i / 4] = b_signed ? (uint32_t)(int8_t)b[r][i] : b[r][i];
        }
    memcpy(acc, c, sizeof acc);
    for (int m = 0; m < rows; m++)
        for (int kk = 0; kk < 4 * quads; kk++)
            for (int n = 0; n < TILE_MAX_COLSB / 4; n++)
                acc[m][n] += wa[m][kk] * bt[kk][n];
    for (int m = 0; m < rows; m++)
        memcpy(c[m], acc[m], (size_t)cols * sizeof *acc[m]);
}

static void dp_int8(int c, int a, int b, bool a_signed, bool b_signed)
{
    check_product(c, a, b);
    dp_int8_rows(tiles.data[c], tiles.data[a], tiles.data[b], a_signed, b_signed, tiles.cfg.rows[c],
                 tiles.cfg.colsb[c] / 4, tiles.cfg.colsb[a] / 4);
}

void tile_emu_dpbssd(int c, int a, int b)
{
    dp_int8(c, a, b, true, true);
}

void tile_emu_dpbsud(int c, int a, int b)
{
    dp_int8(c, a, b, true, false);
}

void tile_emu_dpbusd(int c, int a, int b)
{
    dp_int8(c, a, b, false, true);
}
