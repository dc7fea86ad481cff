/*
 * json_request.c — /v1/score and the rerank paths' bodies into messages (see
 * json_request.h). The message under construction stays consistent at
 * every step (counts match what the arrays hold), so a failure anywhere
 * frees it whole with protobuf_c_message_free_unpacked.
 */
#include "json_request.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_reader.h"

typedef struct {
    json_reader r;
    decode_budget *budget;
    bool out_of_memory; /* malloc failed within the budget */
} reading;

static void *take(reading *x, size_t size)
{
    void *p = decode_budget_alloc(x->budget, size);
    if (!p) {
        x->out_of_memory = !x->budget->exceeded;
        json_fail(&x->r, "message_too_large", NULL, "over the decoding budget");
    }
    return p;
}

/* Room for one more element in *array of *cap; false (and the reader
 * failed) when the budget is spent. */
static bool grow(reading *x, void **array, size_t n, size_t *cap, size_t elem)
{
    if (n < *cap) return true;
    size_t want = *cap ? *cap * 2 : 8;
    void *grown = decode_budget_realloc(x->budget, *array, *cap * elem, want * elem);
    if (!grown) {
        x->out_of_memory = !x->budget->exceeded;
        return json_fail(&x->r, "message_too_large", NULL, "over the decoding budget");
    }
    *array = grown;
    *cap = want;
    return true;
}

static char *read_text(reading *x, const char *field)
{
    size_t bound;
    if (!json_string_bound(&x->r, field, &bound)) return NULL;
    char *s = take(x, bound);
    if (s && !json_read_string(&x->r, field, s, NULL)) {
        free(s);
        return NULL;
    }
    return s;
}

static bool read_ids(reading *x, const char *field, int32_t **ids, size_t *n)
{
    if (!json_array_begin(&x->r, field)) return false;
    size_t cap = 0;
    while (json_array_next(&x->r)) {
        int64_t v;
        if (!grow(x, (void **)ids, *n, &cap, sizeof **ids)) return false;
        if (!json_read_int(&x->r, NULL, INT32_MIN, INT32_MAX, &v)) {
            json_name_field(&x->r, "%s[%zu]", field, *n);
            return false;
        }
        (*ids)[(*n)++] = (int32_t)v;
    }
    return !json_failed(&x->r);
}

/* A query or item: a string is text, an array token ids, null neither
 * (the shared conversion then says missing_input). */
static Lmscore__V1__Input *read_input(reading *x, const char *field)
{
    Lmscore__V1__Input *in = take(x, sizeof *in);
    if (!in) return NULL;
    lmscore__v1__input__init(in);
    switch (json_peek(&x->r)) {
    case JSON_NULL:
        json_read_null(&x->r);
        return in;
    case JSON_STRING:
        in->kind_case = LMSCORE__V1__INPUT__KIND_TEXT;
        if ((in->text = read_text(x, field))) return in;
        break;
    case JSON_ARRAY:
        in->kind_case = LMSCORE__V1__INPUT__KIND_TOKEN_IDS;
        if (!(in->token_ids = take(x, sizeof *in->token_ids))) break;
        lmscore__v1__token_ids__init(in->token_ids);
        if (read_ids(x, field, &in->token_ids->ids, &in->token_ids->n_ids)) return in;
        break;
    case JSON_INVALID:
        break;
    default:
        json_fail(&x->r, "malformed_request", field,
                  "expected a string (text) or an array of token ids");
    }
    protobuf_c_message_free_unpacked(&in->base, NULL);
    return NULL;
}

static bool read_items(reading *x, Lmscore__V1__ScoreRequest *req)
{
    if (!json_array_begin(&x->r, "items")) return false;
    size_t cap = 0;
    while (json_array_next(&x->r)) {
        char field[32];
        snprintf(field, sizeof field, "items[%zu]", req->n_items);
        if (!grow(x, (void **)&req->items, req->n_items, &cap, sizeof *req->items)) return false;
        Lmscore__V1__Input *in = read_input(x, field);
        if (!in) return false;
        req->items[req->n_items++] = in;
    }
    return !json_failed(&x->r);
}

static bool read_texts(reading *x, const char *field, char ***texts, size_t *n)
{
    if (!json_array_begin(&x->r, field)) return false;
    size_t cap = 0;
    while (json_array_next(&x->r)) {
        char name[96];
        snprintf(name, sizeof name, "%s[%zu]", field, *n);
        if (!grow(x, (void **)texts, *n, &cap, sizeof **texts)) return false;
        char *s = read_text(x, name);
        if (!s) return false;
        (*texts)[(*n)++] = s;
    }
    return !json_failed(&x->r);
}

/* An Algorithm by its proto name ("ALGORITHM_SERIAL") or number. A number
 * the enum does not name is refused here, with gRPC's reason and message:
 * the C enum cannot hold every int32 (its values are all >= 0, so the
 * compiler may make it unsigned), and a message must not carry a value its
 * type cannot say. */
static bool read_algorithm(reading *x, Lmscore__V1__Algorithm *out)
{
    int64_t v;
    if (json_peek(&x->r) == JSON_NUMBER) {
        if (!json_read_int(&x->r, "algorithm", INT32_MIN, INT32_MAX, &v)) return false;
        if (!protobuf_c_enum_descriptor_get_value(&lmscore__v1__algorithm__descriptor, (int)v))
            return json_fail(&x->r, "unknown_algorithm", "algorithm", "unknown value %d", (int)v);
        *out = (Lmscore__V1__Algorithm)v;
        return true;
    }
    char name[48] = "";
    size_t bound;
    if (!json_string_bound(&x->r, "algorithm", &bound)) return false;
    if (!json_read_string(&x->r, "algorithm", bound <= sizeof name ? name : NULL, NULL))
        return false;
    const ProtobufCEnumValue *e =
        protobuf_c_enum_descriptor_get_value_by_name(&lmscore__v1__algorithm__descriptor, name);
    if (!e)
        return json_fail(&x->r, "unknown_algorithm", "algorithm",
                         "unknown value \"%.48s\" (ALGORITHM_UNSPECIFIED, ALGORITHM_SERIAL, ...)",
                         name);
    *out = (Lmscore__V1__Algorithm)e->value;
    return true;
}

static bool read_bool(reading *x, const char *field, protobuf_c_boolean *out)
{
    bool b;
    if (!json_read_bool(&x->r, field, &b)) return false;
    *out = b;
    return true;
}

/* A member seen before: JSON allows it, but which one counts is every
 * parser's own guess, so it is refused. */
static bool first_time(reading *x, unsigned *seen, unsigned bit, const char *key)
{
    if (*seen & bit) return json_fail(&x->r, "malformed_request", key, "the member appears twice");
    *seen |= bit;
    return true;
}

/* The outcome of a walk: the reader's error, or the budget's. */
static lms_status finish(reading *x, const decode_budget *budget, lms_error *err)
{
    json_end(&x->r);
    if (!json_failed(&x->r)) return LMS_OK;
    if (x->out_of_memory) return lms_fail(err, LMS_ERR_NOMEM, NULL, NULL, "out of memory");
    if (budget->exceeded)
        return lms_fail(err, LMS_ERR_RESOURCE_EXHAUSTED, "message_too_large", NULL,
                        "the request decodes to more than %lld bytes (it has too many "
                        "elements); send fewer items per call",
                        (long long)budget->limit);
    if (err) *err = x->r.err;
    return x->r.err.status;
}

enum {
    SEEN_QUERY = 1,
    SEEN_ITEMS = 2,
    SEEN_LABEL_IDS = 4,
    SEEN_LABEL_TEXTS = 8,
    SEEN_SOFTMAX = 16,
    SEEN_ITEM_FIRST = 32,
    SEEN_LOGPROBS = 64,
    SEEN_ALGORITHM = 128,
    SEEN_MODEL = 256,
    SEEN_DOCUMENTS = 512,
    SEEN_TOP_N = 1024,
    SEEN_RETURN_DOCUMENTS = 2048,
    SEEN_RAW_SCORES = 4096,
    SEEN_TRUNCATE = 8192,
    SEEN_MAX_TOKENS = 16384,
    SEEN_TRUNCATE_PROMPT = 32768,
    SEEN_DIRECTION = 65536,
    SEEN_RANK_FIELDS = 131072,
};

/* vLLM's truncate_prompt_tokens: the most tokens of a sequence, -1 for the
 * server's limit; the item (document) is cut, keeping its start. */
static bool read_truncate_prompt(reading *x, const char *key, Lmscore__V1__Truncation *t)
{
    int64_t v;
    if (!json_read_int(&x->r, key, -1, INT32_MAX, &v)) return false;
    if (v == 0)
        return json_fail(&x->r, "malformed_request", key,
                         "-1 (the server's limit) or a positive token count");
    t->max_sequence_tokens = v < 0 ? 0 : (int32_t)v;
    return true;
}

/* A required member the body left out (or null), once the body has been
 * read to its end (a body that is not JSON says so first). */
static bool require(reading *x, unsigned seen, unsigned bit, const char *key)
{
    if (!json_end(&x->r) || seen & bit) return true;
    return json_fail(&x->r, "missing_field", key, "missing, and required");
}

static bool read_model(reading *x, unsigned *seen, char **model)
{
    return first_time(x, seen, SEEN_MODEL, "model") && (*model = read_text(x, "model"));
}

static bool read_score_member(reading *x, const char *key, unsigned *seen,
                              Lmscore__V1__ScoreRequest *req, char **model)
{
    if (strcmp(key, "query") == 0)
        return first_time(x, seen, SEEN_QUERY, key) && (req->query = read_input(x, "query"));
    if (strcmp(key, "items") == 0)
        return first_time(x, seen, SEEN_ITEMS, key) && read_items(x, req);
    if (strcmp(key, "label_token_ids") == 0)
        return first_time(x, seen, SEEN_LABEL_IDS, key) &&
               read_ids(x, key, &req->label_token_ids, &req->n_label_token_ids);
    if (strcmp(key, "label_texts") == 0)
        return first_time(x, seen, SEEN_LABEL_TEXTS, key) &&
               read_texts(x, key, &req->label_texts, &req->n_label_texts);
    if (strcmp(key, "apply_softmax") == 0)
        return first_time(x, seen, SEEN_SOFTMAX, key) && read_bool(x, key, &req->apply_softmax);
    if (strcmp(key, "item_first") == 0)
        return first_time(x, seen, SEEN_ITEM_FIRST, key) && read_bool(x, key, &req->item_first);
    if (strcmp(key, "return_logprobs") == 0)
        return first_time(x, seen, SEEN_LOGPROBS, key) && read_bool(x, key, &req->return_logprobs);
    if (strcmp(key, "algorithm") == 0)
        return first_time(x, seen, SEEN_ALGORITHM, key) && read_algorithm(x, &req->algorithm);
    if (strcmp(key, "model") == 0) return read_model(x, seen, model);
    if (strcmp(key, "truncate_prompt_tokens") == 0) {
        if (!first_time(x, seen, SEEN_TRUNCATE_PROMPT, key)) return false;
        if (!(req->truncation = take(x, sizeof *req->truncation))) return false;
        lmscore__v1__truncation__init(req->truncation);
        return read_truncate_prompt(x, key, req->truncation);
    }
    return json_skip(&x->r);
}

lms_status json_score_request(const char *body, size_t len, decode_budget *budget,
                              Lmscore__V1__ScoreRequest **out, char **model, lms_error *err)
{
    reading x = {.budget = budget};
    json_reader_init(&x.r, body, len);
    *out = NULL;
    *model = NULL;
    Lmscore__V1__ScoreRequest *req = take(&x, sizeof *req);
    if (req) lmscore__v1__score_request__init(req);
    unsigned seen = 0;
    char key[JSON_KEY_MAX];
    if (req && json_object_begin(&x.r, "")) {
        while (json_object_next(&x.r, key)) {
            /* null is absent, whatever the member */
            if (json_read_null(&x.r)) continue;
            if (!read_score_member(&x, key, &seen, req, model)) break;
        }
    }
    require(&x, seen, SEEN_QUERY, "query");
    require(&x, seen, SEEN_ITEMS, "items");
    lms_status st = finish(&x, budget, err);
    if (st == LMS_OK) {
        *out = req;
    } else {
        if (req) protobuf_c_message_free_unpacked(&req->base, NULL);
        free(*model);
        *model = NULL;
    }
    return st;
}

/* Most rank_fields: Cohere's documents carry a handful of members. */
#define MAX_RANK_FIELDS 16

/* The text scored of a Cohere v1 document object (its JSON, len bytes):
 * its "text" member, required, without rank_fields; with them, the named
 * members it has, as "name: value" lines in rank_fields' order (Cohere's
 * join), at least one of them. The document's other members are the
 * client's. */
static char *object_text(reading *x, const char *json, size_t len, const char *field,
                         char *const *fields, size_t n_fields)
{
    static char *const text_only[] = {"text"};
    bool named = n_fields > 0;
    if (!named) fields = text_only, n_fields = 1;
    reading y = {.budget = x->budget};
    json_reader_init(&y.r, json, len);
    char *value[MAX_RANK_FIELDS] = {0};
    char member[JSON_KEY_MAX + 96], key[JSON_KEY_MAX];
    json_object_begin(&y.r, field);
    while (json_object_next(&y.r, key)) {
        size_t j = 0;
        while (j < n_fields && strcmp(key, fields[j]) != 0)
            j++;
        snprintf(member, sizeof member, "%s.%s", field, key);
        if (j == n_fields)
            json_skip(&y.r);
        else if (value[j])
            json_fail(&y.r, "malformed_request", member, "the member appears twice");
        else
            value[j] = read_text(&y, member);
    }
    size_t n = 0, present = 0;
    for (size_t j = 0; j < n_fields; j++)
        if (value[j]) n += strlen(fields[j]) + 2 + strlen(value[j]) + 1, present++;
    snprintf(member, sizeof member, "%s.%s", field, fields[0]);
    if (!present && !json_failed(&y.r))
        json_fail(&y.r, "missing_field", member,
                  named ? "missing, and required (none of rank_fields is there)"
                        : "missing, and required");
    char *text = NULL;
    if (!json_failed(&y.r) && !named) {
        text = value[0];
        value[0] = NULL;
    } else if (!json_failed(&y.r) && (text = take(&y, n + 1))) {
        size_t at = 0;
        for (size_t j = 0; j < n_fields; j++)
            if (value[j])
                at += (size_t)sprintf(text + at, "%s%s: %s", at ? "\n" : "", fields[j], value[j]);
    }
    for (size_t j = 0; j < n_fields; j++)
        free(value[j]);
    if (json_failed(&y.r) && !json_failed(&x->r)) {
        x->r.err = y.r.err;
        x->out_of_memory = y.out_of_memory;
    }
    return json_failed(&x->r) ? NULL : text;
}

/* A document object's JSON as sent, kept for the answer: its text is read
 * once the whole body is (rank_fields may come after the documents). */
static char *read_document_object(reading *x, const char *field)
{
    if (json_peek(&x->r) != JSON_OBJECT) return NULL;
    const char *start = x->r.at;
    if (!json_skip(&x->r)) {
        json_name_field(&x->r, "%s", field);
        return NULL;
    }
    size_t len = (size_t)(x->r.at - start);
    char *json = take(x, len + 1);
    if (!json) return NULL;
    memcpy(json, start, len);
    json[len] = '\0';
    return json;
}

/* The documents (TEI: texts): strings, or (Cohere v1) {"text": ...}
 * objects. */
static bool read_documents(reading *x, rerank_dialect dialect, const char *key, rerank_request *out)
{
    if (!json_array_begin(&x->r, key)) return false;
    bool objects = dialect == RERANK_COHERE;
    size_t cap = 0, cap_objects = 0;
    while (json_array_next(&x->r)) {
        char field[JSON_KEY_MAX + 24];
        snprintf(field, sizeof field, "%s[%zu]", key, out->n_documents);
        size_t n = out->n_documents;
        if (!grow(x, (void **)&out->documents, n, &cap, sizeof *out->documents)) return false;
        /* objects, once there is one, as many as documents (NULL: a string) */
        json_kind t = json_peek(&x->r);
        if (objects && (t == JSON_OBJECT || out->objects) && cap_objects < cap) {
            char **grown =
                decode_budget_realloc(x->budget, out->objects, cap_objects * sizeof *out->objects,
                                      cap * sizeof *out->objects);
            if (!grown) {
                x->out_of_memory = !x->budget->exceeded;
                return json_fail(&x->r, "message_too_large", NULL, "over the decoding budget");
            }
            memset(grown + cap_objects, 0, (cap - cap_objects) * sizeof *grown);
            out->objects = grown;
            cap_objects = cap;
        }
        char *text = t == JSON_OBJECT && objects ? read_document_object(x, field)
                     : t == JSON_STRING          ? read_text(x, field)
                                                 : NULL;
        if (!text) {
            if (t != JSON_INVALID && !json_failed(&x->r))
                json_fail(&x->r, "malformed_request", field,
                          objects ? "expected a string or an object with \"text\""
                                  : "expected a string");
            return false;
        }
        if (t == JSON_OBJECT) {
            out->objects[n] = text; /* its text is read at the end, with rank_fields */
            text = NULL;
        }
        out->documents[n] = text;
        out->n_documents = n + 1;
    }
    return !json_failed(&x->r);
}

/* The texts of the document objects, now that rank_fields is known. */
static bool resolve_objects(reading *x, rerank_request *out)
{
    for (size_t i = 0; out->objects && i < out->n_documents && !json_failed(&x->r); i++) {
        if (!out->objects[i]) continue;
        char field[JSON_KEY_MAX + 24];
        snprintf(field, sizeof field, "documents[%zu]", i);
        out->documents[i] = object_text(x, out->objects[i], strlen(out->objects[i]), field,
                                        out->rank_fields, out->n_rank_fields);
    }
    return !json_failed(&x->r);
}

/* TEI's truncation_direction: its enum's names, as serde reads them. */
static bool read_direction(reading *x, const char *key, Lmscore__V1__TruncationSide *side)
{
    char name[16] = "";
    size_t bound;
    json_kind kind = json_peek(&x->r);
    if (kind == JSON_INVALID) return false;
    if (kind != JSON_STRING)
        return json_fail(&x->r, "invalid_truncation_direction", key, "\"Left\" or \"Right\"");
    if (!json_string_bound(&x->r, key, &bound)) return false;
    if (!json_read_string(&x->r, key, bound <= sizeof name ? name : NULL, NULL)) return false;
    if (strcmp(name, "Left") == 0)
        *side = LMSCORE__V1__TRUNCATION_SIDE__TRUNCATION_SIDE_LEFT;
    else if (strcmp(name, "Right") == 0)
        *side = LMSCORE__V1__TRUNCATION_SIDE__TRUNCATION_SIDE_RIGHT;
    else
        return json_fail(&x->r, "invalid_truncation_direction", key,
                         "\"%.15s\": \"Left\" or \"Right\"", name);
    return true;
}

static bool read_rerank_member(reading *x, rerank_dialect dialect, const char *key, unsigned *seen,
                               rerank_request *out, char **model)
{
    bool tei = dialect == RERANK_TEI;
    if (strcmp(key, "query") == 0)
        return first_time(x, seen, SEEN_QUERY, key) && (out->query = read_text(x, "query"));
    if (strcmp(key, tei ? "texts" : "documents") == 0)
        return first_time(x, seen, SEEN_DOCUMENTS, key) && read_documents(x, dialect, key, out);
    if (!tei && strcmp(key, "top_n") == 0)
        return first_time(x, seen, SEEN_TOP_N, key) &&
               json_read_int(&x->r, key, 0, INT32_MAX, &out->top_n);
    if (strcmp(key, dialect == RERANK_COHERE ? "return_documents" : tei ? "return_text" : "") == 0)
        return first_time(x, seen, SEEN_RETURN_DOCUMENTS, key) &&
               json_read_bool(&x->r, key, &out->return_documents);
    if (tei && strcmp(key, "raw_scores") == 0)
        return first_time(x, seen, SEEN_RAW_SCORES, key) &&
               json_read_bool(&x->r, key, &out->raw_scores);
    if (tei && strcmp(key, "truncate") == 0) {
        out->truncation_said = true;
        return first_time(x, seen, SEEN_TRUNCATE, key) &&
               json_read_bool(&x->r, key, &out->truncate);
    }
    if (tei && strcmp(key, "truncation_direction") == 0)
        return first_time(x, seen, SEEN_DIRECTION, key) &&
               read_direction(x, key, &out->truncation.side);
    if (dialect == RERANK_COHERE_V2 && strcmp(key, "max_tokens_per_doc") == 0) {
        int64_t v;
        if (!first_time(x, seen, SEEN_MAX_TOKENS, key) ||
            !json_read_int(&x->r, key, 1, INT32_MAX, &v))
            return false;
        out->truncation.max_item_tokens = (int32_t)v;
        return true;
    }
    if (dialect == RERANK_COHERE && strcmp(key, "truncate_prompt_tokens") == 0) {
        out->truncation_said = out->truncate = true;
        return first_time(x, seen, SEEN_TRUNCATE_PROMPT, key) &&
               read_truncate_prompt(x, key, &out->truncation);
    }
    if (dialect == RERANK_COHERE && strcmp(key, "rank_fields") == 0) {
        if (!first_time(x, seen, SEEN_RANK_FIELDS, key) ||
            !read_texts(x, key, &out->rank_fields, &out->n_rank_fields))
            return false;
        if (out->n_rank_fields > MAX_RANK_FIELDS)
            return json_fail(&x->r, "malformed_request", key, "more than %d fields",
                             MAX_RANK_FIELDS);
        return true;
    }
    if (!tei && strcmp(key, "model") == 0) return read_model(x, seen, model);
    return json_skip(&x->r);
}

lms_status json_rerank_request(rerank_dialect dialect, const char *body, size_t len,
                               decode_budget *budget, rerank_request *out, char **model,
                               lms_error *err)
{
    reading x = {.budget = budget};
    json_reader_init(&x.r, body, len);
    memset(out, 0, sizeof *out);
    out->return_documents = dialect == RERANK_COHERE;
    lmscore__v1__truncation__init(&out->truncation);
    if (dialect == RERANK_COHERE_V2) {
        /* Cohere cuts every document to max_tokens_per_doc */
        out->truncation_said = out->truncate = true;
        out->truncation.max_item_tokens = RERANK_MAX_TOKENS_PER_DOC;
    }
    *model = NULL;
    unsigned seen = 0;
    char key[JSON_KEY_MAX];
    if (json_object_begin(&x.r, "")) {
        while (json_object_next(&x.r, key)) {
            if (json_read_null(&x.r)) continue;
            if (!read_rerank_member(&x, dialect, key, &seen, out, model)) break;
        }
    }
    require(&x, seen, SEEN_QUERY, "query");
    require(&x, seen, SEEN_DOCUMENTS, dialect == RERANK_TEI ? "texts" : "documents");
    if (!json_failed(&x.r)) resolve_objects(&x, out);
    lms_status st = finish(&x, budget, err);
    if (st != LMS_OK) {
        rerank_request_free(out);
        free(*model);
        *model = NULL;
    }
    return st;
}

void rerank_request_drop_documents(rerank_request *r)
{
    for (size_t i = 0; i < r->n_documents; i++) {
        free(r->documents[i]);
        if (r->objects) free(r->objects[i]);
    }
    free(r->documents);
    free(r->objects);
    r->documents = r->objects = NULL;
    r->n_documents = 0;
}

void rerank_request_free(rerank_request *r)
{
    rerank_request_drop_documents(r);
    for (size_t i = 0; i < r->n_rank_fields; i++)
        free(r->rank_fields[i]);
    free(r->rank_fields);
    free(r->query);
    memset(r, 0, sizeof *r);
}
