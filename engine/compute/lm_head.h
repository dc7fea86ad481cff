/*
 * lm_head.h — label log-probabilities at the scored rows of a forward pass:
 * final RMSNorm, LM head over the whole vocabulary, log-softmax.
 *
 * A row's result is the same whatever other rows are scored with it and
 * whatever the thread count (lm_head.c says how).
 */
#ifndef LMS_LM_HEAD_H
#define LMS_LM_HEAD_H

#include <stdint.h>

#include "lmscore.h"
#include "matmul.h"
#include "model.h"
#include "weights.h"

/* out[i × n_labels + j] = log p(labels[j] | row rows[i] of x), for i <
 * n_rows (row i of x itself when rows is NULL); x is [· × d_model], the
 * last layer's output; head is m's output matrix as the tier multiplies it
 * (model_weights.h). Rows go through the head a chunk at a time; each
 * chunk reads the output matrix once, through mm's kernels. */
lms_status lm_head_label_logprobs(const lms_model *m, const lms_weights *head,
                                  const matmul_config *mm, const float *x, const int32_t *rows,
                                  int32_t n_rows, const int32_t *labels, int32_t n_labels,
                                  float *out, lms_error *err);

#endif
