/*
 * tier_proof.c — the start-up self-check of a tier with a reference block
 * (tier.h compute_tier_proves): before the tier is offered, its block
 * function multiplies small fixed problems and must give, bit for bit,
 * what its reference_block gives — the same code with the instructions
 * under proof replaced by their definitions (avx512-bf16: VDPBF16PS in
 * plain C, kernels_avx512_bf16_reference.c; amx: the tile layer's
 * emulation of the SDM's pseudo-code, which defines tdpbf16ps' result
 * exactly — the order of the fused multiply-adds, RNE, DAZ, FTZ — and
 * tdpbssd's and tdpbsud's as exact integer sums, which the kernel then
 * scales in a fixed order of f32 operations). Both run on the tier's own
 * layout, prepared input and kernel family, so the check can only see the
 * instructions: a CPU that computes them as the SDM says matches to the
 * bit; one that does not, or a kernel that misuses them, is caught here
 * rather than in a score. Every kind of product the tier runs on its
 * tiles is checked, x in one and in two values (codes) per value: BF16; Q8
 * of signed codes (float weights quantised as Q8_0: tdpbssd); Q6_K
 * (codes + 32 as unsigned bytes: tdpbsud, a tile product per half block
 * of 16 k values, D per super-block, a sub-scale per half); Q4_K (bias 0:
 * tdpbsud, sub-scales per block, offsets and sub-offsets).
 *
 * The check runs in a child process (fork), which writes its verdict to a
 * pipe and exits: a fault (SIGILL for an instruction the CPU or the OS
 * does not give, SIGSEGV, SIGBUS, SIGFPE), any other signal or a check
 * that does not answer in time ends the child, never the caller, and the
 * tier is dropped with the reason. The child only multiplies on its own
 * thread (no OpenMP team: the problems are below matmul's parallel
 * threshold) and leaves by _exit.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "alloc.h"
#include "half.h"
#include "matmul.h"
#include "tier.h"
#include "weights_pack.h"

bool compute_tier_force_mismatch;
int compute_tier_proof_signal;
int compute_tier_proof_seconds = 20;

/* The problems: x 19 × 75 (a partial group of 16 rows, a partial chunk or
 * block of 32 k values, an odd k), W 40 × 75 (a partial panel) in bf16 and
 * quantised as Q8_0, values of both signs over 2^-8 .. 2^8 with a few
 * denormals and zeros; and x 19 × 256, W 40 × 256 (one super-block) as
 * ggml block types: random bytes (every code, sub-scale and sub-offset)
 * with D (and dmin) from the same values as f16. */
enum { ROWS = 19, K = 75, N = 40, K_BLOCKS = 256 };

static float value(uint32_t *seed)
{
    *seed = *seed * 1664525u + 1013904223u;
    const uint32_t r = *seed >> 8;
    if (r % 29 == 0) return 0.0f;
    if (r % 31 == 0) return (r & 1 ? -1.0f : 1.0f) * 0x1p-130f; /* denormal */
    const float m = 1.0f + (float)(r & 0xFFF) / 4096.0f;
    return (r & 0x1000 ? -m : m) * ldexpf(1.0f, (int)((r >> 13) % 17) - 8);
}

/* t and its reference on one N × k matrix, stored as type and held in
 * format as t keeps it, with x (ROWS × k) in x_codes codes for Q8: the
 * same bits, else false and why. */
static bool proves_on(const compute_tier *t, lms_dtype type, const void *stored,
                      lms_weights_format format, int32_t k, int32_t x_codes, const float *x,
                      matmul_scratch *s, char *why, size_t why_size)
{
    float y[ROWS * N], want[ROWS * N];
    lms_weights w;
    void *buffer = NULL;
    lms_error err = {0};
    bool ok = lms_weights_alloc(&w, type, format, N, k, &buffer, &err) == LMS_OK;
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
        t->reference_block(t, &w, &in, 0, ROWS, 0, N, want, N, KERNEL_STORE);
        t->block(t, &w, &in, 0, ROWS, 0, N, y, N, KERNEL_STORE);
        if (compute_tier_force_mismatch) y[ROWS * N / 2] = nextafterf(y[ROWS * N / 2], 1e30f);
        for (int i = 0; ok && i < ROWS * N; i++)
            if (memcmp(&y[i], &want[i], sizeof y[i])) {
                snprintf(why, why_size,
                         "%s's self-check differs from its reference at [%d][%d] of %s as %s "
                         "(x in %d codes): %a, not %a",
                         t->name, i / N, i % N, lms_dtype_name(type),
                         lms_weights_format_name(format), (int)x_codes, (double)y[i],
                         (double)want[i]);
                ok = false;
            }
    }
    lms_free(buffer);
    return ok;
}

/* The ggml block types the check multiplies, and where each block keeps
 * its f16 D and dmin (-1: none). */
static const struct {
    lms_dtype type;
    int d, dmin;
} BLOCK_TYPES[] = {{LMS_DTYPE_Q6_K, 208, -1}, {LMS_DTYPE_Q4_K, 0, 2}};
#define N_BLOCK_TYPES (sizeof BLOCK_TYPES / sizeof *BLOCK_TYPES)

/* N × K_BLOCKS values of BLOCK_TYPES[i]: a buffer to free, or NULL. */
static unsigned char *block_problem(size_t i)
{
    const size_t bytes = lms_dtype_block_bytes(BLOCK_TYPES[i].type);
    const size_t blocks = (size_t)N * K_BLOCKS / lms_dtype_block_elements(BLOCK_TYPES[i].type);
    unsigned char *out = malloc(blocks * bytes);
    uint32_t seed = 29 + (uint32_t)i;
    for (size_t b = 0; out && b < blocks; b++) {
        unsigned char *block = out + b * bytes;
        for (size_t j = 0; j < bytes; j++) {
            seed = seed * 1664525u + 1013904223u;
            block[j] = (unsigned char)(seed >> 24);
        }
        const int fields[2] = {BLOCK_TYPES[i].d, BLOCK_TYPES[i].dmin};
        for (int f = 0; f < 2; f++) {
            if (fields[f] < 0) continue;
            const uint16_t h = lms_f32_to_f16(value(&seed));
            memcpy(block + fields[f], &h, sizeof h);
        }
    }
    return out;
}

/* The problems' inputs (heap: tens of kilobytes). */
typedef struct {
    uint16_t bf16[N * K];
    float f32[N * K], x[ROWS * K], x_blocks[ROWS * K_BLOCKS];
} problem;

/* t against its reference on the block types, x in codes codes. */
static bool proves_on_blocks(const compute_tier *t, const problem *p, int32_t codes,
                             matmul_scratch *s, char *why, size_t why_size)
{
    bool ok = true;
    for (size_t i = 0; ok && i < N_BLOCK_TYPES; i++) {
        unsigned char *blocks = block_problem(i);
        if (!blocks) {
            snprintf(why, why_size, "%s: no memory for its self-check", t->name);
            return false;
        }
        ok = proves_on(t, BLOCK_TYPES[i].type, blocks, LMS_WEIGHTS_Q8, K_BLOCKS, codes, p->x_blocks,
                       s, why, why_size);
        free(blocks);
    }
    return ok;
}

/* The check itself, in the child. */
static bool proves(const compute_tier *t, char *why, size_t why_size)
{
    if (compute_tier_proof_signal < 0)
        for (;;)
            pause();
    if (compute_tier_proof_signal) raise(compute_tier_proof_signal);
    problem *p = malloc(sizeof *p);
    matmul_scratch *s = matmul_scratch_create(ROWS, K_BLOCKS);
    if (!p || !s) {
        free(p);
        matmul_scratch_free(s);
        snprintf(why, why_size, "%s: no memory for its self-check", t->name);
        return false;
    }
    uint32_t seed = 28;
    for (int i = 0; i < N * K; i++) {
        p->f32[i] = value(&seed);
        p->bf16[i] = lms_f32_to_bf16(p->f32[i]);
    }
    for (int i = 0; i < ROWS * K; i++)
        p->x[i] = value(&seed);
    for (int i = 0; i < ROWS * K_BLOCKS; i++)
        p->x_blocks[i] = value(&seed);
    /* bf16 tiles; int8 tiles on the f32 values quantised as Q8_0 and on
     * the block types; x in one value (code) per value, then in two */
    bool ok = true;
    for (int32_t codes = 1; ok && codes <= 2; codes++)
        ok =
            proves_on(t, LMS_DTYPE_BF16, p->bf16, LMS_WEIGHTS_BF16, K, codes, p->x, s, why,
                      why_size) &&
            proves_on(t, LMS_DTYPE_F32, p->f32, LMS_WEIGHTS_Q8, K, codes, p->x, s, why, why_size) &&
            proves_on_blocks(t, p, codes, s, why, why_size);
    matmul_scratch_free(s);
    free(p);
    return ok;
}

static double seconds_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The child: the verdict as its exit status (0 proved, 1 not), why on fd. */
_Noreturn static void prove_in_child(const compute_tier *t, int fd)
{
    /* A fault ends the child with its own signal, whatever the caller
     * (or a sanitizer) handles or blocks. */
    static const int faults[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE};
    for (size_t i = 0; i < sizeof faults / sizeof *faults; i++)
        signal(faults[i], SIG_DFL);
    sigset_t all;
    sigfillset(&all);
    sigprocmask(SIG_UNBLOCK, &all, NULL);
    char why[240] = "";
    const bool ok = proves(t, why, sizeof why);
    const size_t n = strlen(why);
    const ssize_t written = write(fd, why, n);
    _exit(ok ? 0 : (size_t)written == n ? 1 : 2);
}

/* Reads the child's reason into why until it closes the pipe or the
 * deadline passes: false on the deadline. */
static bool read_reason(int fd, double deadline, char *why, size_t why_size)
{
    size_t used = 0;
    for (;;) {
        const double left = deadline - seconds_now();
        if (left <= 0) return false;
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        const int ready = poll(&pfd, 1, (int)(left * 1000) + 1);
        if (ready < 0 && errno == EINTR) continue;
        if (ready <= 0) continue; /* the deadline is checked above */
        char chunk[128];
        const ssize_t n = read(fd, chunk, sizeof chunk);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return true;
        for (ssize_t i = 0; i < n && used + 1 < why_size; i++)
            why[used++] = chunk[i];
        if (why_size) why[used] = '\0';
    }
}

/* The child's end: its status, waiting until the deadline; false (and the
 * child killed) when it has not ended by then. */
static bool reap(pid_t pid, double deadline, int *status)
{
    for (;;) {
        const pid_t got = waitpid(pid, status, WNOHANG);
        if (got == pid) return true;
        if (got < 0 && errno != EINTR) {
            *status = -1;
            return true;
        }
        if (seconds_now() >= deadline) {
            kill(pid, SIGKILL);
            while (waitpid(pid, status, 0) < 0 && errno == EINTR) {
            }
            return false;
        }
        nanosleep(&(struct timespec){.tv_nsec = 1000000}, NULL);
    }
}

bool compute_tier_proves(const compute_tier *t, char *why, size_t why_size)
{
    if (!t->reference_block) return true;
    if (why_size) why[0] = '\0';
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) {
        snprintf(why, why_size, "%s: no pipe for its self-check (%s)", t->name, strerror(errno));
        return false;
    }
    const pid_t pid = fork();
    if (pid < 0) {
        snprintf(why, why_size, "%s: no process for its self-check (fork: %s)", t->name,
                 strerror(errno));
        close(fds[0]);
        close(fds[1]);
        return false;
    }
    if (pid == 0) {
        close(fds[0]);
        prove_in_child(t, fds[1]);
    }
    close(fds[1]);
    const double deadline = seconds_now() + compute_tier_proof_seconds;
    char reason[240] = "";
    int status = 0;
    const bool answered = read_reason(fds[0], deadline, reason, sizeof reason);
    close(fds[0]);
    const bool ended = reap(pid, answered ? deadline : 0, &status);
    if (!answered || !ended) {
        snprintf(why, why_size, "%s did not finish its self-check within %d s", t->name,
                 compute_tier_proof_seconds);
        return false;
    }
    if (status == -1) {
        snprintf(why, why_size, "%s: its self-check's process was lost (%s)", t->name,
                 strerror(errno));
        return false;
    }
    if (WIFSIGNALED(status)) {
        snprintf(why, why_size, "%s faulted (%s) in its self-check", t->name,
                 strsignal(WTERMSIG(status)));
        return false;
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return true;
    if (WIFEXITED(status) && WEXITSTATUS(status) == 1 && reason[0]) {
        snprintf(why, why_size, "%s", reason);
        return false;
    }
    snprintf(why, why_size, "%s: its self-check ended with status %d", t->name, status);
    return false;
}
