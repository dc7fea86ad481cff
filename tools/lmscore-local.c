/*
 * lmscore-local — score one request with a local model, no server: the tool
 * every bug report uses.
 *
 *   lmscore-local --model PATH --request FILE|- [--algorithm NAME]
 *                 [--delimiter ID] [--max-packed-tokens N] [--repeat N]
 *                 [--prefix-cache-mib N] [--precision auto|f32|bf16|bf16x2|int8|int8x2]
 *                 [--isa auto|TIER]
 *
 * The request is JSON: {"query": [ids] | "text", "items": [[ids] | "text",
 * ...], "label_token_ids": [ids] (or "label_texts": ["text", ...]),
 * "apply_softmax": false, "item_first": false, "algorithm": "auto"}.
 * Text is tokenized as the service does: the query with the model's special
 * tokens (BOS when it adds one), items without. Prints the result as JSON
 * (scores, logprobs, the algorithm and precision with their reasons, token
 * counts, seconds, the kernels, the weights' formats, bytes and parameter
 * count, and lms_engine_open's seconds); a rejected request prints
 * {"error": {...}} and exits 2, other failures 1.
 */
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "lmscore.h"

typedef struct {
    lms_tokens query;
    lms_tokens *items;
    int32_t n_items;
    int32_t *labels;
    int32_t n_labels;
    int32_t **owned; /* every ids buffer we allocated */
    int32_t n_owned;
} parsed_request;

static int usage(void)
{
    fprintf(stderr,
            "usage: lmscore-local --model PATH --request FILE|- [--algorithm "
            "auto|serial|packed_dense|packed_segment|prefill_extend]\n"
            "                     [--delimiter ID] [--max-packed-tokens N] [--repeat N]\n"
            "                     [--prefix-cache-mib N] [--precision "
            "auto|f32|bf16|bf16x2|int8|int8x2]\n"
            "                     [--kv-cache-dtype auto|f32|f16] [--isa %s]\n"
            "--isa names the compute tier (default auto: the fastest the CPU runs).\n"
            "--repeat N scores the request N times and reports the last run's seconds\n"
            "(with a prefix cache large enough for the query, runs after the first are\n"
            "warm).\n",
            lms_isa_names());
    return 1;
}

static int print_error(const lms_error *err)
{
    json_object *o = json_object_new_object(), *e = json_object_new_object();
    json_object_object_add(e, "status", json_object_new_string(lms_status_name(err->status)));
    json_object_object_add(e, "reason", json_object_new_string(err->reason));
    json_object_object_add(e, "field", json_object_new_string(err->field));
    json_object_object_add(e, "message", json_object_new_string(err->msg));
    json_object_object_add(o, "error", e);
    puts(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
    json_object_put(o);
    return err->status == LMS_ERR_INVALID_ARGUMENT ? 2 : 1;
}

static int32_t *keep(parsed_request *p, int32_t *buf)
{
    int32_t **grown = realloc(p->owned, (size_t)(p->n_owned + 1) * sizeof *grown);
    if (!grown) {
        free(buf);
        return NULL;
    }
    p->owned = grown;
    p->owned[p->n_owned++] = buf;
    return buf;
}

/* A JSON array of ints or a string (tokenized) into tokens. */
static lms_status to_tokens(const lms_engine *e, parsed_request *p, json_object *v,
                            bool add_special, const char *field, lms_tokens *out, lms_error *err)
{
    if (json_object_is_type(v, json_type_string)) {
        const lms_tokenizer *tok = lms_engine_tokenizer(e);
        if (!tok)
            return lms_fail(err, LMS_ERR_INVALID_ARGUMENT, NULL, field,
                            "%s is text but the model has no tokenizer", field);
        int32_t *ids = NULL;
        size_t n = 0;
        lms_status st =
            lms_tokenizer_encode(tok, json_object_get_string(v),
                                 (size_t)json_object_get_string_len(v), add_special, &ids, &n, err);
        if (st != LMS_OK) return st;
        if (!keep(p, ids)) return lms_fail(err, LMS_ERR_NOMEM, NULL, NULL, "no memory");
        out->ids = ids;
        out->len = (int32_t)n;
        return LMS_OK;
    }
    if (!json_object_is_type(v, json_type_array))
        return lms_fail(err, LMS_ERR_INVALID_ARGUMENT, NULL, field,
                        "%s must be a string or an array of token ids", field);
    size_t n = json_object_array_length(v);
    int32_t *ids = keep(p, malloc((n ? n : 1) * sizeof *ids));
    if (!ids) return lms_fail(err, LMS_ERR_NOMEM, NULL, NULL, "no memory");
    for (size_t i = 0; i < n; i++) {
        json_object *x = json_object_array_get_idx(v, i);
        int64_t id = json_object_get_int64(x);
        if (!json_object_is_type(x, json_type_int) || id < INT32_MIN || id > INT32_MAX)
            return lms_fail(err, LMS_ERR_INVALID_ARGUMENT, NULL, field,
                            "%s[%zu] is not a 32-bit integer", field, i);
        ids[i] = (int32_t)id;
    }
    out->ids = ids;
    out->len = (int32_t)n;
    return LMS_OK;
}

static lms_status parse_request(const lms_engine *e, json_object *root, parsed_request *p,
                                lms_score_request *req, lms_error *err)
{
    json_object *v;
    memset(req, 0, sizeof *req);
    if (!json_object_is_type(root, json_type_object))
        return lms_fail(err, LMS_ERR_INVALID_ARGUMENT, NULL, NULL, "the request must be an object");
    lms_status st = LMS_OK;
    if (json_object_object_get_ex(root, "query", &v))
        st = to_tokens(e, p, v, true, "query", &p->query, err);
    if (st != LMS_OK) return st;
    if (json_object_object_get_ex(root, "items", &v)) {
        if (!json_object_is_type(v, json_type_array))
            return lms_fail(err, LMS_ERR_INVALID_ARGUMENT, NULL, "items", "items must be an array");
        p->n_items = (int32_t)json_object_array_length(v);
        p->items = calloc((size_t)p->n_items + 1, sizeof *p->items);
        if (!p->items) return lms_fail(err, LMS_ERR_NOMEM, NULL, NULL, "no memory");
        int text = -1;
        for (int32_t i = 0; i < p->n_items && st == LMS_OK; i++) {
            json_object *it = json_object_array_get_idx(v, i);
            int is_text = json_object_is_type(it, json_type_string);
            if (text >= 0 && is_text != text)
                return lms_fail(err, LMS_ERR_INVALID_ARGUMENT, "mixed_input_types", "items",
                                "items mix text and token ids");
            text = is_text;
            char field[32];
            snprintf(field, sizeof field, "items[%d]", i);
            st = to_tokens(e, p, it, false, field, &p->items[i], err);
        }
        if (st != LMS_OK) return st;
        json_object *q;
        if (text >= 0 && json_object_object_get_ex(root, "query", &q) &&
            json_object_is_type(q, json_type_string) != text)
            return lms_fail(err, LMS_ERR_INVALID_ARGUMENT, "mixed_input_types", "query",
                            "the query and the items must both be text or both token ids");
    }
    if (json_object_object_get_ex(root, "label_token_ids", &v)) {
        lms_tokens t;
        st = to_tokens(e, p, v, false, "label_token_ids", &t, err);
        if (st != LMS_OK) return st;
        p->labels = (int32_t *)t.ids;
        p->n_labels = t.len;
    } else if (json_object_object_get_ex(root, "label_texts", &v) &&
               json_object_is_type(v, json_type_array)) {
        const lms_tokenizer *tok = lms_engine_tokenizer(e);
        p->n_labels = (int32_t)json_object_array_length(v);
        p->labels = keep(p, malloc(((size_t)p->n_labels + 1) * sizeof(int32_t)));
        if (!p->labels) return lms_fail(err, LMS_ERR_NOMEM, NULL, NULL, "no memory");
        for (int32_t i = 0; i < p->n_labels; i++) {
            json_object *s = json_object_array_get_idx(v, i);
            if (!tok || !json_object_is_type(s, json_type_string))
                return lms_fail(err, LMS_ERR_INVALID_ARGUMENT, NULL, "label_texts",
                                "label_texts[%d] must be text and the model needs a tokenizer", i);
            st = lms_tokenizer_single_token(tok, json_object_get_string(s),
                                            (size_t)json_object_get_string_len(s), &p->labels[i],
                                            err);
            if (st != LMS_OK) return st;
        }
    }
    req->query = p->query;
    req->items = p->items;
    req->n_items = p->n_items;
    req->label_ids = p->labels;
    req->n_labels = p->n_labels;
    if (json_object_object_get_ex(root, "apply_softmax", &v))
        req->apply_softmax = json_object_get_boolean(v);
    if (json_object_object_get_ex(root, "item_first", &v))
        req->item_first = json_object_get_boolean(v);
    if (json_object_object_get_ex(root, "algorithm", &v) &&
        !lms_algorithm_parse(json_object_get_string(v), &req->algorithm))
        return lms_fail(err, LMS_ERR_INVALID_ARGUMENT, NULL, "algorithm", "unknown algorithm '%s'",
                        json_object_get_string(v));
    return LMS_OK;
}

static json_object *matrix(const float *x, int32_t rows, int32_t cols)
{
    json_object *a = json_object_new_array_ext(rows);
    for (int32_t i = 0; i < rows; i++) {
        json_object *row = json_object_new_array_ext(cols);
        for (int32_t k = 0; k < cols; k++)
            json_object_array_add(row, json_object_new_double(x[(size_t)i * cols + k]));
        json_object_array_add(a, row);
    }
    return a;
}

static void print_result(const lms_engine *engine, const lms_score_result *r, double seconds,
                         double load_seconds)
{
    lms_model_info mi;
    lms_engine_model_info(engine, &mi);
    json_object *o = json_object_new_object();
    json_object_object_add(o, "scores", matrix(r->scores, r->n_items, r->n_labels));
    json_object_object_add(o, "logprobs", matrix(r->logprobs, r->n_items, r->n_labels));
    json_object_object_add(o, "algorithm",
                           json_object_new_string(lms_algorithm_name(r->algorithm)));
    json_object_object_add(o, "algorithm_reason", json_object_new_string(r->algorithm_reason));
    json_object_object_add(o, "prompt_tokens", json_object_new_int64(r->prompt_tokens));
    json_object_object_add(o, "computed_tokens", json_object_new_int64(r->computed_tokens));
    json_object_object_add(o, "cached_tokens", json_object_new_int64(r->cached_tokens));
    json_object_object_add(o, "seconds", json_object_new_double(seconds));
    json_object_object_add(o, "precision", json_object_new_string(mi.precision));
    json_object_object_add(o, "precision_reason", json_object_new_string(mi.precision_reason));
    json_object_object_add(o, "kv_cache_dtype", json_object_new_string(mi.kv_dtype));
    json_object_object_add(o, "isa", json_object_new_string(mi.isa));
    json_object_object_add(o, "kernels", json_object_new_string(mi.kernels));
    json_object_object_add(o, "weights", json_object_new_string(mi.weights));
    json_object_object_add(o, "weight_bytes", json_object_new_int64(mi.weight_bytes));
    json_object_object_add(o, "parameters", json_object_new_int64(mi.parameters));
    json_object_object_add(o, "load_seconds", json_object_new_double(load_seconds));
    /* %.9g round-trips a float exactly */
    json_c_set_serialization_double_format("%.9g", JSON_C_OPTION_GLOBAL);
    puts(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
    json_object_put(o);
}

int main(int argc, char **argv)
{
    const char *model = NULL, *request = NULL, *algorithm = NULL, *precision = NULL;
    int repeat = 1;
    lms_engine_options opt;
    lms_engine_options_default(&opt);
    for (int i = 1; i < argc; i += 2) {
        const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (!val) return usage();
        if (!strcmp(a, "--model"))
            model = val;
        else if (!strcmp(a, "--request"))
            request = val;
        else if (!strcmp(a, "--algorithm"))
            algorithm = val;
        else if (!strcmp(a, "--delimiter"))
            opt.delimiter = atoi(val);
        else if (!strcmp(a, "--max-packed-tokens"))
            opt.max_packed_tokens = atoi(val);
        else if (!strcmp(a, "--max-items"))
            opt.max_items = atoi(val);
        else if (!strcmp(a, "--max-sequence-tokens"))
            opt.max_sequence_tokens = atoi(val);
        else if (!strcmp(a, "--repeat"))
            repeat = atoi(val);
        else if (!strcmp(a, "--prefix-cache-mib"))
            opt.prefix_cache_bytes = (size_t)strtoull(val, NULL, 10) << 20;
        else if (!strcmp(a, "--precision"))
            precision = val;
        else if (!strcmp(a, "--kv-cache-dtype") && lms_kv_dtype_parse(val, &opt.kv_dtype))
            continue;
        else if (!strcmp(a, "--isa") && lms_isa_known(val))
            opt.isa = val;
        else
            return usage();
    }
    if (!model || !request || repeat < 1) return usage();
    if (precision && !lms_precision_parse(precision, &opt.precision)) {
        fprintf(stderr, "lmscore-local: unknown precision '%s'\n", precision);
        return 1;
    }
    if (algorithm && !lms_algorithm_parse(algorithm, &opt.algorithm)) {
        fprintf(stderr, "lmscore-local: unknown algorithm '%s'\n", algorithm);
        return 1;
    }
    json_object *root =
        !strcmp(request, "-") ? json_object_from_fd(0) : json_object_from_file(request);
    if (!root) {
        fprintf(stderr, "lmscore-local: cannot read a JSON request from %s: %s\n", request,
                json_util_get_last_err());
        return 1;
    }
    lms_error err = {0};
    lms_engine *engine = NULL;
    const double load_start = monotonic_seconds();
    if (lms_engine_open(model, &opt, &engine, &err) != LMS_OK) {
        fprintf(stderr, "lmscore-local: %s: %s\n", model, err.msg);
        json_object_put(root);
        return 1;
    }
    const double load_seconds = monotonic_seconds() - load_start;
    parsed_request p = {0};
    lms_score_request req;
    lms_score_result res = {0};
    int rc = 0;
    if (parse_request(engine, root, &p, &req, &err) != LMS_OK) {
        rc = print_error(&err);
    } else {
        double t0 = monotonic_seconds(), dt = 0;
        for (int k = 0; k < repeat && rc == 0; k++) {
            if (k) lms_score_result_free(&res);
            t0 = monotonic_seconds();
            if (lms_engine_score(engine, &req, NULL, &res, &err) != LMS_OK) rc = print_error(&err);
            dt = monotonic_seconds() - t0;
        }
        if (rc == 0) print_result(engine, &res, dt, load_seconds);
    }
    lms_score_result_free(&res);
    for (int32_t i = 0; i < p.n_owned; i++)
        free(p.owned[i]);
    free(p.owned);
    free(p.items);
    json_object_put(root);
    lms_engine_close(engine);
    return rc;
}
