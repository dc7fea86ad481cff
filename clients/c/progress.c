/*
 * progress.c — the stderr progress bar of `stream`.
 */
#include "progress.h"

#include <stdio.h>

#include "clock.h"

enum { BAR_WIDTH = 30 };

void progress_init(progress *p, bool enabled, int64_t total)
{
    p->enabled = enabled;
    p->total = total;
    p->start = monotonic_seconds();
    p->last_draw = 0;
    p->drawn = false;
}

static void draw(progress *p, int64_t done, int64_t sent, double now)
{
    double elapsed = now - p->start;
    double rate = elapsed > 0 ? (double)done / elapsed : 0;
    if (p->total > 0) {
        char bar[BAR_WIDTH + 1];
        int filled = (int)(BAR_WIDTH * (double)done / (double)p->total);
        for (int i = 0; i < BAR_WIDTH; i++)
            bar[i] = i < filled ? '#' : ' ';
        bar[BAR_WIDTH] = '\0';
        fprintf(stderr, "\r[%s] %lld/%lld items  %.0f items/s ", bar, (long long)done,
                (long long)p->total, rate);
    } else {
        fprintf(stderr, "\r%lld items scored, %lld sent  %.0f items/s ", (long long)done,
                (long long)sent, rate);
    }
    p->last_draw = now;
    p->drawn = true;
}

void progress_update(progress *p, int64_t done, int64_t sent)
{
    if (!p->enabled) return;
    double now = monotonic_seconds();
    if (now - p->last_draw >= 0.1) draw(p, done, sent, now);
}

void progress_finish(progress *p, int64_t done, int64_t sent)
{
    if (!p->enabled) return;
    draw(p, done, sent, monotonic_seconds());
    fputc('\n', stderr);
}
