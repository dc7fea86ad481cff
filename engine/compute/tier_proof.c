/*
 * tier_proof.c — the start-up self-check of a matrix-engine tier (tier.h
 * compute_tier_proves): before the tier is offered, its block function
 * multiplies a small fixed problem and must give, bit for bit, what its
 * reference tier gives (the amx tier: the emulation of the SDM's
 * pseudo-code, which defines tdpbf16ps' result exactly — the order of the
 * fused multiply-adds, RNE, DAZ, FTZ — and tdpbssd's as exact integer
 * sums, which the kernel then scales in a fixed order of f32 operations;
 * so a CPU that computes them as the SDM says matches to the bit; one that
 * does not, or a kernel that misuses them, is caught here rather than in a
 * score). Every product the tier runs on its tiles is checked: BF16, and
 * Q8 of signed codes with x in one and in two codes per value. A fault
 * (SIGILL, SIGSEGV: a tile instruction the OS did not enable) counts as a
 * failure.
 */
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "alloc.h"
#include "half.h"
#include "matmul.h"
#include "tier.h"
#include "weights_pack.h"

bool compute_tier_force_mismatch;

/* The problem: x 19 × 75 (a partial group of 16 rows, a partial chunk or
 * block of 32 k values, an odd k), W 40 × 75 (a partial panel) in bf16 and
 * quantised as Q8_0, values of both signs over 2^-8 .. 2^8 with a few
 * denormals and zeros. */
enum { ROWS = 19, K = 75, N = 40 };

static float value(uint32_t *seed)
{
    *seed = *seed * 1664525u + 1013904223u;
    const uint32_t r = *seed >> 8;
    if (r % 29 == 0) return 0.0f;
    if (r % 31 == 0) return (r & 1 ? -1.0f : 1.0f) * 0x1p-130f; /* denormal */
    const float m = 1.0f + (float)(r & 0xFFF) / 4096.0f;
    return (r & 0x1000 ? -m : m) * ldexpf(1.0f, (int)((r >> 13) % 17) - 8);
}

/* The fault handler's way back, for the thread running the check. */
static pthread_mutex_t proving = PTHREAD_MUTEX_INITIALIZER;
static sigjmp_buf fault_return;

static void on_fault(int sig)
{
    siglongjmp(fault_return, sig);
}

/* t's block over the problem into y; false (why set) on a fault. */
static bool run_guarded(const compute_tier *t, const lms_weights *w, const matmul_input *in,
                        float *y, char *why, size_t why_size)
{
    struct sigaction guard = {.sa_handler = on_fault}, old_ill, old_segv;
    sigemptyset(&guard.sa_mask);
    pthread_mutex_lock(&proving);
    sigaction(SIGILL, &guard, &old_ill);
    sigaction(SIGSEGV, &guard, &old_segv);
    const int sig = sigsetjmp(fault_return, 1);
    if (!sig) t->block(t, w, in, 0, ROWS, 0, N, y, N, KERNEL_STORE);
    sigaction(SIGILL, &old_ill, NULL);
    sigaction(SIGSEGV, &old_segv, NULL);
    pthread_mutex_unlock(&proving);
    if (sig) snprintf(why, why_size, "%s faulted (%s) in its self-check", t->name, strsignal(sig));
    return !sig;
}

/* t and its reference on one matrix, stored as type and held in format
 * as t keeps it, with x in x_codes codes for Q8: the same bits, else false
 * and why. */
static bool proves_on(const compute_tier *t, lms_dtype type, const void *stored,
                      lms_weights_format format, int32_t x_codes, const float *x, matmul_scratch *s,
                      char *why, size_t why_size)
{
    const compute_tier *ref = t->proven_against;
    float y[ROWS * N], want[ROWS * N];
    lms_weights w;
    void *buffer = NULL;
    lms_error err = {0};
    bool ok = lms_weights_alloc(&w, type, format, N, K, &buffer, &err) == LMS_OK;
    if (ok) {
        compute_tier_own_layout(t, &w);
        w.x_codes = x_codes;
        const lms_pack_job job = {type, stored, &w, false};
        ok = lms_pack_run(&job, 1, NULL, &err) == LMS_OK;
    }
    if (!ok) {
        snprintf(why, why_size, "%s: no memory for its self-check", t->name);
    } else {
        const matmul_config cfg = {t};
        matmul_input in;
        matmul_prepare(&cfg, &w, x, ROWS, s, &in);
        ref->block(ref, &w, &in, 0, ROWS, 0, N, want, N, KERNEL_STORE);
        ok = run_guarded(t, &w, &in, y, why, why_size);
        if (ok && compute_tier_force_mismatch) y[ROWS * N / 2] = nextafterf(y[ROWS * N / 2], 1e30f);
        for (int i = 0; ok && i < ROWS * N; i++)
            if (memcmp(&y[i], &want[i], sizeof y[i])) {
                snprintf(why, why_size,
                         "%s's self-check differs from %s at [%d][%d] of %s (x in %d codes): %a, "
                         "not %a",
                         t->name, ref->name, i / N, i % N, lms_weights_format_name(format),
                         (int)x_codes, (double)y[i], (double)want[i]);
                ok = false;
            }
    }
    lms_free(buffer);
    return ok;
}

bool compute_tier_proves(const compute_tier *t, char *why, size_t why_size)
{
    if (!t->proven_against) return true;
    uint32_t seed = 28;
    uint16_t bf16[N * K];
    float f32[N * K], x[ROWS * K];
    for (int i = 0; i < N * K; i++) {
        f32[i] = value(&seed);
        bf16[i] = lms_f32_to_bf16(f32[i]);
    }
    for (int i = 0; i < ROWS * K; i++)
        x[i] = value(&seed);
    matmul_scratch *s = matmul_scratch_create(ROWS, K);
    if (!s) {
        snprintf(why, why_size, "%s: no memory for its self-check", t->name);
        return false;
    }
    /* bf16 tiles; int8 tiles on the f32 values quantised as Q8_0, x in one
     * code per value and in two */
    const bool ok = proves_on(t, LMS_DTYPE_BF16, bf16, LMS_WEIGHTS_BF16, 1, x, s, why, why_size) &&
                    proves_on(t, LMS_DTYPE_F32, f32, LMS_WEIGHTS_Q8, 1, x, s, why, why_size) &&
                    proves_on(t, LMS_DTYPE_F32, f32, LMS_WEIGHTS_Q8, 2, x, s, why, why_size);
    matmul_scratch_free(s);
    return ok;
}
