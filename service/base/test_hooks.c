/*
 * test_hooks.c — see test_hooks.h. Compiled twice: with LMSCORE_TEST_HOOKS
 * into lmscored-test-hooks, without it into lmscored.
 */
#include "test_hooks.h"

#include <stdlib.h>

int64_t test_hook_ms(const char *name)
{
#ifdef LMSCORE_TEST_HOOKS
    const char *v = getenv(name);
    return v ? strtoll(v, NULL, 10) : 0;
#else
    (void)name;
    return 0;
#endif
}
