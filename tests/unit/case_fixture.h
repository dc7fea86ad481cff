/*
 * case_fixture.h — cases that cannot run on every machine (a tier without a
 * precision's kernels, no second tier to compare with, no generated models)
 * run alone, each as its own CTest entry: the program named with the case's
 * function name as its argument. Where such a case cannot run it calls
 * fixture_skip, which ends the program with FIXTURE_SKIPPED (77) and CTest
 * reports the entry as skipped (SKIP_RETURN_CODE) — never cmocka's skip(),
 * which CTest counts as a pass.
 */
#ifndef LMS_TEST_CASE_FIXTURE_H
#define LMS_TEST_CASE_FIXTURE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef FIXTURE_SKIPPED
#define FIXTURE_SKIPPED 77
#endif

/* Ends the program as skipped, saying why. */
static inline void fixture_skip(const char *why)
{
    printf("skipped: %s\n", why);
    exit(FIXTURE_SKIPPED);
}

/* Without an argument, runs tests[]; with one, runs only the case of
 * alone[] of that name (exit 2 for a name none has). */
static inline int fixture_run_cases(int argc, char **argv, const struct CMUnitTest *tests,
                                    size_t n_tests, const struct CMUnitTest *alone, size_t n_alone)
{
    if (argc < 2) return _cmocka_run_group_tests(argv[0], tests, n_tests, NULL, NULL);
    for (size_t i = 0; i < n_alone; i++)
        if (strcmp(alone[i].name, argv[1]) == 0)
            return _cmocka_run_group_tests(argv[1], &alone[i], 1, NULL, NULL);
    fprintf(stderr, "%s: no case %s runs alone\n", argv[0], argv[1]);
    return 2;
}

#define fixture_run(argc, argv, tests, alone)                                                      \
    fixture_run_cases(argc, argv, tests, sizeof(tests) / sizeof *(tests), alone,                   \
                      sizeof(alone) / sizeof *(alone))

#endif
