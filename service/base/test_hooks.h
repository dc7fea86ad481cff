/*
 * test_hooks.h — fault injection for the daemon's own tests (a stalled
 * worker for the watchdog test, a slow model load for the health test, a
 * stuck one for the stop deadline's, frequent load progress lines for the
 * log test's, a dropped amx tier for the precision test's).
 * Only the lmscored-test-hooks binary, built with LMSCORE_TEST_HOOKS,
 * honours them; in lmscored they always read as 0.
 */
#ifndef LMSCORED_TEST_HOOKS_H
#define LMSCORED_TEST_HOOKS_H

#include <stdint.h>

/* Milliseconds from environment variable `name` (e.g.
 * LMSCORE_TEST_STALL_WORKER_MS), or 0. */
int64_t test_hook_ms(const char *name);

#endif
