/*
 * rerank_profile.c — rerank profiles: the built-ins, profile files, the
 * template split around {query} and {document}, the labels' ids, and the
 * ScoreRequest of a rerank request (see rerank_profile.h).
 */
#include "rerank_profile.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_reader.h"
#include "log.h"
#include "read_file.h"

#define FLAG              "rerank-profile"
#define MAX_PROFILE_BYTES ((size_t)1 << 20)

static const struct {
    const char *name;
    const char *template;
    const char *labels[2];
} BUILTIN[] = {
    {"yes-no",
     "Query: {query}\nDocument: {document}\nIs the document relevant to the query? Answer:",
     {" yes", " no"}},
    {"qwen3-reranker",
     "<|im_start|>system\nJudge whether the Document meets the requirements based on the Query "
     "and the Instruct provided. Note that the answer can only be \"yes\" or \"no\".<|im_end|>\n"
     "<|im_start|>user\n<Instruct>: Given a web search query, retrieve relevant passages that "
     "answer the query\n<Query>: {query}\n<Document>: {document}<|im_end|>\n"
     "<|im_start|>assistant\n<think>\n\n</think>\n\n",
     {"yes", "no"}},
};
#define N_BUILTIN (sizeof BUILTIN / sizeof BUILTIN[0])

/* The one place of needle in template; NULL when it is not there once. */
static const char *once(const char *template, const char *needle)
{
    const char *at = strstr(template, needle);
    return at && !strstr(at + 1, needle) ? at : NULL;
}

static lms_status split(rerank_profile *p, const char *template, lms_error *err)
{
    const char *q = once(template, "{query}"), *d = once(template, "{document}");
    if (!q || !d || d < q)
        return lms_fail(err, LMS_ERR_INVALID_ARGUMENT, NULL, FLAG,
                        "--rerank-profile %s: the template must hold {query} and then "
                        "{document}, each once",
                        p->name);
    const char *middle = q + strlen("{query}");
    const char *lead = d;
    while (lead > middle && lead[-1] == ' ')
        lead--;
    const char *tail = d + strlen("{document}");
    p->head = strndup(template, (size_t)(q - template));
    p->middle = strndup(middle, (size_t)(lead - middle));
    p->lead = strndup(lead, (size_t)(d - lead));
    p->tail = strdup(tail);
    if (!p->head || !p->middle || !p->lead || !p->tail)
        return lms_fail(err, LMS_ERR_NOMEM, NULL, FLAG, "out of memory");
    return LMS_OK;
}

static lms_status add_label(rerank_profile *p, const char *text, size_t len, lms_error *err)
{
    if (p->n_labels == RERANK_MAX_LABELS)
        return lms_fail(err, LMS_ERR_INVALID_ARGUMENT, NULL, FLAG,
                        "--rerank-profile %s: more than %d labels", p->name, RERANK_MAX_LABELS);
    if (!(p->labels[p->n_labels] = strndup(text, len)))
        return lms_fail(err, LMS_ERR_NOMEM, NULL, FLAG, "out of memory");
    p->n_labels++;
    return LMS_OK;
}

/* {"template": "...", "labels": ["...", ...]}; other members are skipped. */
static lms_status parse_file(rerank_profile *p, const char *text, size_t len, lms_error *err)
{
    json_reader r;
    json_reader_init(&r, text, len);
    char key[JSON_KEY_MAX];
    char *template = NULL;
    lms_status st = LMS_OK;
    if (json_object_begin(&r, "")) {
        while (st == LMS_OK && json_object_next(&r, key)) {
            size_t bound, n;
            if (strcmp(key, "template") == 0 && !template) {
                if (json_string_bound(&r, "template", &bound) && (template = malloc(bound)))
                    json_read_string(&r, "template", template, NULL);
            } else if (strcmp(key, "labels") == 0 && p->n_labels == 0 &&
                       json_array_begin(&r, "labels")) {
                while (st == LMS_OK && json_array_next(&r)) {
                    char label[64];
                    if (json_string_bound(&r, "labels", &bound) && bound <= sizeof label &&
                        json_read_string(&r, "labels", label, &n))
                        st = add_label(p, label, n, err);
                    else
                        json_fail(&r, "malformed_request", "labels",
                                  "each label is a string of at most %zu bytes", sizeof label - 1);
                }
            } else {
                json_skip(&r);
            }
        }
    }
    json_end(&r);
    if (st == LMS_OK && json_failed(&r))
        st = lms_fail(err, LMS_ERR_INVALID_ARGUMENT, NULL, FLAG, "--rerank-profile %s: %s", p->name,
                      r.err.msg);
    if (st == LMS_OK && (!template || p->n_labels == 0))
        st = lms_fail(err, LMS_ERR_INVALID_ARGUMENT, NULL, FLAG,
                      "--rerank-profile %s: a profile is {\"template\": \"...{query}..."
                      "{document}...\", \"labels\": [\"yes\", \"no\"]}",
                      p->name);
    if (st == LMS_OK) st = split(p, template, err);
    free(template);
    return st;
}

lms_status rerank_profile_load(const char *spec, rerank_profile *out, lms_error *err)
{
    memset(out, 0, sizeof *out);
    if (!spec || !spec[0]) spec = RERANK_PROFILE_DEFAULT;
    if (!(out->name = strdup(spec)))
        return lms_fail(err, LMS_ERR_NOMEM, NULL, FLAG, "out of memory");
    lms_status st = LMS_OK;
    size_t i = 0;
    while (i < N_BUILTIN && strcmp(BUILTIN[i].name, spec) != 0)
        i++;
    if (i < N_BUILTIN) {
        st = split(out, BUILTIN[i].template, err);
        for (size_t j = 0; st == LMS_OK && j < 2; j++)
            st = add_label(out, BUILTIN[i].labels[j], strlen(BUILTIN[i].labels[j]), err);
    } else {
        size_t len;
        char *text = read_file(spec, FLAG, MAX_PROFILE_BYTES, &len, err);
        st = text ? parse_file(out, text, len, err) : (err ? err->status : LMS_ERR_IO);
        free(text);
    }
    if (st != LMS_OK) rerank_profile_free(out);
    return st;
}

void rerank_profile_free(rerank_profile *p)
{
    free(p->name);
    free(p->head);
    free(p->middle);
    free(p->lead);
    free(p->tail);
    for (size_t i = 0; i < p->n_labels; i++)
        free(p->labels[i]);
    memset(p, 0, sizeof *p);
}

lms_status rerank_profile_bind(rerank_profile *p, const lms_engine *e, lms_error *err)
{
    const lms_tokenizer *tok = lms_engine_tokenizer(e);
    lms_status st = LMS_OK;
    if (!tok)
        st = lms_fail(&p->unbound, LMS_ERR_INVALID_ARGUMENT, "no_tokenizer", FLAG,
                      "the rerank profile %s needs a tokenizer, and the model has none", p->name);
    for (size_t i = 0; st == LMS_OK && i < p->n_labels; i++)
        if ((st = lms_tokenizer_single_token(tok, p->labels[i], strlen(p->labels[i]),
                                             &p->label_ids[i], &p->unbound)) != LMS_OK) {
            snprintf(p->unbound.field, sizeof p->unbound.field, "%s", FLAG);
            lms_fail_context(&p->unbound, "the rerank profile %s's label \"%s\"", p->name,
                             p->labels[i]);
        }
    p->bound = st == LMS_OK;
    if (!p->bound && err) *err = p->unbound;
    return st;
}

lms_status rerank_profile_bind_serving(rerank_profile *p, const lms_engine *e, bool asked,
                                       lms_error *err)
{
    lms_error why = {0};
    if (rerank_profile_bind(p, e, &why) == LMS_OK) return LMS_OK;
    if (asked) {
        if (err) *err = why;
        return why.status;
    }
    log_record r;
    log_begin(&r, LOG_WARNING,
              "the default rerank profile does not fit the model: the rerank paths "
              "answer why (choose one with --rerank-profile)");
    log_str(&r, "error", why.msg);
    log_end(&r);
    return LMS_OK;
}

/* a ++ b ++ c, allocated within the budget; NULL past it. */
static char *join(decode_budget *b, const char *x, const char *y, const char *z)
{
    size_t nx = strlen(x), ny = strlen(y), nz = strlen(z);
    char *out = decode_budget_alloc(b, nx + ny + nz + 1);
    if (!out) return NULL;
    memcpy(out, x, nx);
    memcpy(out + nx, y, ny);
    memcpy(out + nx + ny, z, nz + 1);
    return out;
}

static Lmscore__V1__Input *text_input(decode_budget *b, const char *x, const char *y, const char *z)
{
    Lmscore__V1__Input *in = decode_budget_alloc(b, sizeof *in);
    if (!in) return NULL;
    lmscore__v1__input__init(in);
    if (!(in->text = join(b, x, y, z))) {
        free(in);
        return NULL;
    }
    in->kind_case = LMSCORE__V1__INPUT__KIND_TEXT;
    return in;
}

lms_status rerank_profile_request(const rerank_profile *p, const char *query, char *const *docs,
                                  size_t n_docs, const Lmscore__V1__Truncation *truncation,
                                  decode_budget *budget, Lmscore__V1__ScoreRequest **out,
                                  lms_error *err)
{
    Lmscore__V1__ScoreRequest *req = decode_budget_alloc(budget, sizeof *req);
    if (req) {
        lmscore__v1__score_request__init(req);
        req->query = text_input(budget, p->head, query, p->middle);
        req->item_suffix = text_input(budget, p->tail, "", "");
        req->items = decode_budget_alloc(budget, (n_docs ? n_docs : 1) * sizeof *req->items);
        req->label_token_ids = decode_budget_alloc(budget, p->n_labels * sizeof(int32_t));
        if (truncation &&
            (req->truncation = decode_budget_alloc(budget, sizeof *req->truncation))) {
            /* the fields alone: a decoded message's unknown fields stay its own */
            lmscore__v1__truncation__init(req->truncation);
            req->truncation->max_item_tokens = truncation->max_item_tokens;
            req->truncation->max_sequence_tokens = truncation->max_sequence_tokens;
            req->truncation->side = truncation->side;
        }
    }
    bool ok = req && req->query && req->item_suffix && req->items && req->label_token_ids &&
              (!truncation || req->truncation);
    for (size_t i = 0; ok && i < n_docs; i++)
        if ((ok = (req->items[i] = text_input(budget, p->lead, docs[i], "")) != NULL))
            req->n_items = i + 1;
    if (!ok) {
        if (req) protobuf_c_message_free_unpacked(&req->base, NULL);
        if (budget->exceeded)
            return lms_fail(err, LMS_ERR_RESOURCE_EXHAUSTED, "message_too_large", NULL,
                            "the documents with the rerank template take more than %lld bytes; "
                            "send fewer documents per call",
                            (long long)budget->limit);
        return lms_fail(err, LMS_ERR_NOMEM, NULL, NULL, "out of memory");
    }
    req->n_label_token_ids = p->n_labels;
    memcpy(req->label_token_ids, p->label_ids, p->n_labels * sizeof(int32_t));
    req->apply_softmax = p->n_labels > 1;
    *out = req;
    return LMS_OK;
}
