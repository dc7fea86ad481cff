/*
 * progress.h — telling a caller's lms_stop how far long work got: the
 * pieces of a step (packing the weights, converting them) done so far, as
 * the threads doing them finish each.
 */
#ifndef LMS_PROGRESS_H
#define LMS_PROGRESS_H

#include <stdatomic.h>
#include <stddef.h>

#include "lmscore.h"

/* One more piece of total done (counted in *done across threads); stop's
 * on_progress, when it has one, hears the new count. */
static inline void lms_progress_piece(const lms_stop *stop, const char *what, atomic_size_t *done,
                                      size_t total)
{
    size_t now = atomic_fetch_add_explicit(done, 1, memory_order_relaxed) + 1;
    if (stop && stop->on_progress) stop->on_progress(stop->ctx, what, now, total);
}

#endif
