/*
 * clones.h — LMS_HOT marks a hot loop to be compiled for AVX-512
 * (x86-64-v4), AVX2 and baseline x86-64, one chosen at load time (ifunc).
 *
 * GCC only: clang 14's clones do not link from a static library, and the
 * sanitizer builds do not need the speed. A clone never changes a result:
 * the kernels under it are written so that every element gets the same
 * sequence of IEEE operations whatever the vector width (the build uses
 * -ffp-contract=off, so no clone fuses a multiply and an add).
 */
#ifndef LMS_CLONES_H
#define LMS_CLONES_H

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) &&                             \
    !defined(__SANITIZE_ADDRESS__)
#define LMS_HOT __attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))
#else
#define LMS_HOT
#endif

#endif
