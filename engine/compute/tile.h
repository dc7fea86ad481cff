/*
 * tile.h — the AMX tile layer the matrix-engine kernels are written
 * against: configure (palette 1), load, store, zero, release, and the dot
 * products tdpbf16ps (bf16 pairs into f32), tdpbssd, tdpbsud and tdpbusd
 * (int8 quads into int32: the first letter of each pair says whether A's
 * bytes are signed or unsigned, the second B's). A file that defines TILE_INTRINSICS before
 * including it (compiled with -mamx-tile -mamx-bf16 -mamx-int8) gets the instructions; any other
 * gets tile_emulated.c, plain C that follows the instruction set reference's pseudo-code, so that
 * the same kernel runs, and is tested, on every CPU.
 *
 * Tile numbers are constants (the instructions encode them). B of a dot
 * product holds k in pairs (bf16) or quads (int8) per dword: row r, dword
 * n of B holds elements k = 2r, 2r+1 (or 4r .. 4r+3) of column n — the
 * "VNNI" layout.
 */
#ifndef LMS_TILE_H
#define LMS_TILE_H

#include <stdint.h>

#define TILE_COUNT     8
#define TILE_MAX_ROWS  16
#define TILE_MAX_COLSB 64

/* ldtilecfg's 64-byte operand: palette 1; rows and bytes per row of each
 * tile (0 for a tile not used). */
typedef struct {
    uint8_t palette;   /* 1 */
    uint8_t start_row; /* 0: restarting an interrupted load is the CPU's business */
    uint8_t reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} tile_config;

#ifdef TILE_INTRINSICS
#include <immintrin.h>

/* gcc 12's ldtilecfg and tileloadd asm statements tell the compiler of
 * no memory read (ldtilecfg names 8 of the 64 bytes): a compiler barrier
 * first, so that the stores that fill a configuration or a tile's source
 * are neither moved past them nor dropped. */
#define tile_barrier() __asm__ volatile("" ::: "memory")
#define tile_configure(cfg)                                                                        \
    do {                                                                                           \
        tile_barrier();                                                                            \
        _tile_loadconfig(cfg);                                                                     \
    } while (0)
#define tile_release() _tile_release()
#define tile_load(t, base, stride)                                                                 \
    do {                                                                                           \
        tile_barrier();                                                                            \
        _tile_loadd(t, base, stride);                                                              \
    } while (0)
#define tile_store(t, base, stride) _tile_stored(t, base, stride)
#define tile_zero(t)                _tile_zero(t)
#define tile_dpbf16ps(c, a, b)      _tile_dpbf16ps(c, a, b)
#define tile_dpbssd(c, a, b)        _tile_dpbssd(c, a, b)
#define tile_dpbsud(c, a, b)        _tile_dpbsud(c, a, b)
#define tile_dpbusd(c, a, b)        _tile_dpbusd(c, a, b)
#else
#include <stddef.h>

/* The emulation: one tile state per thread, as each thread has its own
 * tile registers. A use the hardware would fault on (no configuration, a
 * shape that does not fit) aborts. */
void tile_emu_configure(const tile_config *cfg);
void tile_emu_release(void);
void tile_emu_load(int t, const void *base, size_t stride);
void tile_emu_store(int t, void *base, size_t stride);
void tile_emu_zero(int t);
void tile_emu_dpbf16ps(int c, int a, int b);
void tile_emu_dpbssd(int c, int a, int b);
void tile_emu_dpbsud(int c, int a, int b);
void tile_emu_dpbusd(int c, int a, int b);

#define tile_configure(cfg)         tile_emu_configure(cfg)
#define tile_release()              tile_emu_release()
#define tile_load(t, base, stride)  tile_emu_load(t, base, stride)
#define tile_store(t, base, stride) tile_emu_store(t, base, stride)
#define tile_zero(t)                tile_emu_zero(t)
#define tile_dpbf16ps(c, a, b)      tile_emu_dpbf16ps(c, a, b)
#define tile_dpbssd(c, a, b)        tile_emu_dpbssd(c, a, b)
#define tile_dpbsud(c, a, b)        tile_emu_dpbsud(c, a, b)
#define tile_dpbusd(c, a, b)        tile_emu_dpbusd(c, a, b)
#endif

#endif
