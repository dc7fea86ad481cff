/*
 * score_spec.c — the query/labels/switches options shared by `score` and
 * `stream`, and the request fields they become.
 */
#include "score_spec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "inputs.h"

enum {
    OPT_QUERY,
    OPT_QUERY_IDS,
    OPT_LABEL,
    OPT_LABEL_ID,
    OPT_SOFTMAX,
    OPT_LOGPROBS,
    OPT_ITEM_FIRST,
    OPT_ALGORITHM,
    OPT_JSON,
};

static const cli_option SPEC_OPTIONS[] = {
    [OPT_QUERY] = {"query", "TEXT", "the query as text (tokenized by the server)"},
    [OPT_QUERY_IDS] = {"query-ids", "IDS", "the query as token ids, e.g. 1,2,3"},
    [OPT_LABEL] = {"label", "TEXT", "a label as text (must be one token); repeatable"},
    [OPT_LABEL_ID] = {"label-id", "IDS", "label token id(s), e.g. 9454,2753; repeatable"},
    [OPT_SOFTMAX] = {"softmax", NULL, "normalise each item's scores over the labels"},
    [OPT_LOGPROBS] = {"logprobs", NULL, "also print the raw log-probabilities"},
    [OPT_ITEM_FIRST] = {"item-first", NULL, "score item ++ query instead of query ++ item"},
    [OPT_ALGORITHM] = {"algorithm", "NAME",
                       "auto|serial|packed_dense|packed_segment|prefill_extend"},
    [OPT_JSON] = {"json", NULL, "print JSON instead of tab-separated text"},
};

/* Indexed by the lmscore.v1.Algorithm values. */
static const char *const ALGORITHM_NAMES[] = {"auto", "serial", "packed_dense", "packed_segment",
                                              "prefill_extend"};
enum { N_ALGORITHMS = sizeof ALGORITHM_NAMES / sizeof ALGORITHM_NAMES[0] };

const char *algorithm_name(Lmscore__V1__Algorithm algorithm)
{
    return (unsigned)algorithm < N_ALGORITHMS ? ALGORITHM_NAMES[algorithm] : "unknown";
}

bool algorithm_from_name(const char *value, Lmscore__V1__Algorithm *out)
{
    for (unsigned i = 0; i < N_ALGORITHMS; i++) {
        if (strcmp(value, ALGORITHM_NAMES[i]) == 0) {
            *out = (Lmscore__V1__Algorithm)i;
            return true;
        }
    }
    fprintf(stderr,
            "lmscore: --algorithm wants auto, serial, packed_dense, packed_segment or "
            "prefill_extend, not \"%s\"\n",
            value);
    return false;
}

static bool set_query(score_spec *spec, Lmscore__V1__Input *query)
{
    if (!query) return false;
    input_free(spec->query);
    spec->query = query;
    return true;
}

static bool add_label_ids(score_spec *spec, const char *value)
{
    int32_t *ids;
    size_t n;
    if (!parse_token_ids(value, "--label-id", &ids, &n)) return false;
    bool ok = true;
    for (size_t i = 0; i < n && ok; i++)
        ok = array_push((void **)&spec->label_ids, &spec->n_label_ids, &spec->cap_label_ids,
                        sizeof ids[i], &ids[i]);
    free(ids);
    if (!ok) fprintf(stderr, "lmscore: out of memory\n");
    return ok;
}

static bool handle_option(void *ctx, size_t index, const char *value)
{
    score_spec *spec = ctx;
    switch (index) {
    case OPT_QUERY:
        return set_query(spec, input_from_text(value));
    case OPT_QUERY_IDS:
        return set_query(spec, input_from_token_ids(value, "--query-ids"));
    case OPT_LABEL:
        return array_push((void **)&spec->label_texts, &spec->n_label_texts, &spec->cap_label_texts,
                          sizeof value, &value);
    case OPT_LABEL_ID:
        return add_label_ids(spec, value);
    case OPT_SOFTMAX:
        spec->apply_softmax = true;
        return true;
    case OPT_LOGPROBS:
        spec->return_logprobs = true;
        return true;
    case OPT_ITEM_FIRST:
        spec->item_first = true;
        return true;
    case OPT_ALGORITHM:
        return algorithm_from_name(value, &spec->algorithm);
    case OPT_JSON:
        spec->json = true;
        return true;
    }
    return false;
}

cli_group score_spec_options(score_spec *spec)
{
    return (cli_group){"query, labels and scoring", SPEC_OPTIONS,
                       sizeof SPEC_OPTIONS / sizeof SPEC_OPTIONS[0], handle_option, spec};
}

bool score_spec_complete(const score_spec *spec, const char *command)
{
    const char *missing = !spec->query ? "a query (--query or --query-ids)"
                          : spec->n_label_ids + spec->n_label_texts == 0
                              ? "at least one label (--label or --label-id)"
                              : NULL;
    if (missing)
        fprintf(stderr, "lmscore %s: needs %s\n(see: lmscore %s --help)\n", command, missing,
                command);
    return missing == NULL;
}

/* ScoreRequest and ScoreItemsHeader name these fields alike. */
#define POINT_AT_SPEC(msg, spec)                                                                   \
    do {                                                                                           \
        (msg)->query = (spec)->query;                                                              \
        (msg)->label_token_ids = (spec)->label_ids;                                                \
        (msg)->n_label_token_ids = (spec)->n_label_ids;                                            \
        (msg)->label_texts = (spec)->label_texts;                                                  \
        (msg)->n_label_texts = (spec)->n_label_texts;                                              \
        (msg)->apply_softmax = (spec)->apply_softmax;                                              \
        (msg)->return_logprobs = (spec)->return_logprobs;                                          \
        (msg)->item_first = (spec)->item_first;                                                    \
        (msg)->algorithm = (spec)->algorithm;                                                      \
    } while (0)

void score_spec_to_request(const score_spec *spec, Lmscore__V1__ScoreRequest *req)
{
    POINT_AT_SPEC(req, spec);
}

void score_spec_to_header(const score_spec *spec, Lmscore__V1__ScoreItemsHeader *header)
{
    POINT_AT_SPEC(header, spec);
}

void score_spec_free(score_spec *spec)
{
    input_free(spec->query);
    free(spec->label_ids);
    free(spec->label_texts);
    memset(spec, 0, sizeof *spec);
}
