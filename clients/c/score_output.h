/*
 * score_output.h — how item scores are printed by `score` and `stream`:
 * tab-separated rows (index, one score per label, then the logprobs when
 * asked) or one JSON object per item, plus the human summary of a call.
 */
#ifndef LMSCORE_CLI_SCORE_OUTPUT_H
#define LMSCORE_CLI_SCORE_OUTPUT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <json-c/json.h>

#include "lmscore/v1/score.pb-c.h"

/* "item<TAB>score:<id>...<TAB>logprob:<id>..." */
void output_header_tsv(FILE *out, const int32_t *label_ids, size_t n_labels, bool with_logprobs);
/* "<index><TAB><score>...<TAB><logprob>..." */
void output_item_tsv(FILE *out, int64_t index, const Lmscore__V1__ItemScores *item);
/* {"index": i, "scores": [...], "logprobs": [...]} */
json_object *output_item_json(int64_t index, const Lmscore__V1__ItemScores *item);
/* Prints obj on one line and releases it. */
void output_json_line(FILE *out, json_object *obj);

/* A ServerTiming duration in seconds; 0 when absent. */
double output_duration_seconds(const Google__Protobuf__Duration *d);

/* "algorithm: NAME (REASON); N prompt tokens, N computed, N cached; server:
 * Q ms queued, P ms preparing, E ms in the engine" on stderr. */
void output_call_summary(Lmscore__V1__Algorithm algorithm, const char *reason,
                         const Lmscore__V1__Usage *usage, const Lmscore__V1__ServerTiming *timing);

#endif
