/*
 * score_output.c — printing item scores as TSV rows or JSON objects.
 */
#include "score_output.h"

#include "pb_json.h"
#include "score_spec.h"

void output_header_tsv(FILE *out, const int32_t *label_ids, size_t n_labels, bool with_logprobs)
{
    fputs("item", out);
    for (size_t j = 0; j < n_labels; j++)
        fprintf(out, "\tscore:%d", (int)label_ids[j]);
    for (size_t j = 0; with_logprobs && j < n_labels; j++)
        fprintf(out, "\tlogprob:%d", (int)label_ids[j]);
    fputc('\n', out);
}

void output_item_tsv(FILE *out, int64_t index, const Lmscore__V1__ItemScores *item)
{
    fprintf(out, "%lld", (long long)index);
    for (size_t j = 0; j < item->n_scores; j++)
        fprintf(out, "\t%.9g", item->scores[j]);
    for (size_t j = 0; j < item->n_logprobs; j++)
        fprintf(out, "\t%.9g", item->logprobs[j]);
    fputc('\n', out);
}

json_object *output_item_json(int64_t index, const Lmscore__V1__ItemScores *item)
{
    json_object *obj = json_object_new_object();
    json_object_object_add(obj, "index", json_object_new_int64(index));
    json_object *scores = pb_to_json(&item->base);
    json_object_object_foreach(scores, key, value)
    {
        json_object_object_add(obj, key, json_object_get(value));
    }
    json_object_put(scores);
    return obj;
}

void output_json_line(FILE *out, json_object *obj)
{
    fputs(json_object_to_json_string_ext(obj, JSON_C_TO_STRING_PLAIN), out);
    fputc('\n', out);
    json_object_put(obj);
}

double output_duration_seconds(const Google__Protobuf__Duration *d)
{
    return d ? (double)d->seconds + (double)d->nanos / 1e9 : 0.0;
}

void output_call_summary(Lmscore__V1__Algorithm algorithm, const char *reason,
                         const Lmscore__V1__Usage *usage, const Lmscore__V1__ServerTiming *timing)
{
    fprintf(stderr, "algorithm: %s (%s)", algorithm_name(algorithm),
            reason && *reason ? reason : "no reason given");
    if (usage)
        fprintf(stderr, "; %lld prompt tokens, %lld computed, %lld cached",
                (long long)usage->prompt_tokens, (long long)usage->computed_tokens,
                (long long)usage->cached_tokens);
    if (timing)
        fprintf(stderr, "; server: %.3f ms queued, %.3f ms preparing, %.3f ms in the engine",
                output_duration_seconds(timing->queue_time) * 1e3,
                output_duration_seconds(timing->prepare_time) * 1e3,
                output_duration_seconds(timing->engine_time) * 1e3);
    fputc('\n', stderr);
}
