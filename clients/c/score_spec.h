/*
 * score_spec.h — what `score` and `stream` share: the query, the labels and
 * the scoring switches, as command-line options and as the fields of a
 * ScoreRequest or a ScoreItemsHeader.
 */
#ifndef LMSCORE_CLI_SCORE_SPEC_H
#define LMSCORE_CLI_SCORE_SPEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cli_args.h"
#include "lmscore/v1/score.pb-c.h"

typedef struct {
    Lmscore__V1__Input *query; /* owned */
    int32_t *label_ids;        /* owned */
    size_t n_label_ids, cap_label_ids;
    char **label_texts; /* the array is owned, the strings are argv's */
    size_t n_label_texts, cap_label_texts;
    bool apply_softmax;
    bool return_logprobs;
    bool item_first;
    bool json;
    Lmscore__V1__Algorithm algorithm;
} score_spec;

/* The option group for cli_parse (ctx: a zeroed score_spec). */
cli_group score_spec_options(score_spec *spec);

/* False, with a usage message, when the query or the labels are missing. */
bool score_spec_complete(const score_spec *spec, const char *command);

/* Point the request's / header's fields at the spec's (borrowed: the spec
 * must outlive the message, which must not be freed with free_unpacked). */
void score_spec_to_request(const score_spec *spec, Lmscore__V1__ScoreRequest *req);
void score_spec_to_header(const score_spec *spec, Lmscore__V1__ScoreItemsHeader *header);

void score_spec_free(score_spec *spec);

/* "serial", "packed_dense", ... for an Algorithm value ("auto" for UNSPECIFIED). */
const char *algorithm_name(Lmscore__V1__Algorithm algorithm);
/* The inverse; false, with a message, for an unknown name. */
bool algorithm_from_name(const char *name, Lmscore__V1__Algorithm *out);

#endif
