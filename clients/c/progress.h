/*
 * progress.h — a one-line progress bar on stderr, redrawn at most ten times
 * a second, for long streams.
 */
#ifndef LMSCORE_CLI_PROGRESS_H
#define LMSCORE_CLI_PROGRESS_H

#include <stdbool.h>
#include <stdint.h>

typedef struct {
    bool enabled;
    int64_t total; /* items expected, or -1 when unknown (stdin) */
    double start;
    double last_draw;
    bool drawn;
} progress;

void progress_init(progress *p, bool enabled, int64_t total);
/* done: results received; sent: items sent so far. */
void progress_update(progress *p, int64_t done, int64_t sent);
/* Draws the final state and ends the line. */
void progress_finish(progress *p, int64_t done, int64_t sent);

#endif
