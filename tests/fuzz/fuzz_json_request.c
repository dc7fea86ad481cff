/*
 * fuzz_json_request.c — libFuzzer target for the HTTP API's JSON reading
 * (service/transport/json_reader.c, service/api/json_request.c). The first
 * input byte picks what the rest is read as: a /v1/score body, a body of
 * each rerank path (/v1/rerank, /v2/rerank, /rerank), or any JSON text. Properties, each a crash
 * when broken:
 *
 * - a body read as a request decodes within its budget (a small one, so
 *   that running out of it is exercised too), and every string it yields
 *   is valid UTF-8;
 * - what a /v1/score body decodes to, written back as JSON by json_writer
 *   and read again, decodes to the same message (the writer's escaping and
 *   the reader's decoding are inverses);
 * - as plain JSON, what the reader accepts json-c accepts too, in its
 *   strict mode with UTF-8 checking; and what json-c accepts (it is more
 *   lenient: leading zeros, "2.", raw control characters in strings),
 *   written out again by json_writer from json-c's tree, the reader
 *   accepts, unless a string holds what the reader refuses on purpose
 *   (U+0000, or a lone surrogate json-c let through).
 */
#include <json-c/json_object.h>
#include <json-c/json_object_iterator.h>
#include <json-c/json_tokener.h>
#include <json-c/linkhash.h>
#include <protobuf-c/protobuf-c.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "json_reader.h"
#include "json_request.h"
#include "json_writer.h"
#include "utf8_oracle.h"

#define BUDGET (256 << 10)

static void check_text(const char *s)
{
    if (s && !utf8_valid((const unsigned char *)s)) abort();
}

static void check_input(const Lmscore__V1__Input *in)
{
    if (in && in->kind_case == LMSCORE__V1__INPUT__KIND_TEXT) check_text(in->text);
}

static void write_input(json_writer *w, const Lmscore__V1__Input *in)
{
    if (!in || in->kind_case == LMSCORE__V1__INPUT__KIND__NOT_SET) {
        json_null(w);
    } else if (in->kind_case == LMSCORE__V1__INPUT__KIND_TEXT) {
        json_string(w, in->text);
    } else {
        json_array_open(w);
        for (size_t i = 0; i < in->token_ids->n_ids; i++)
            json_int(w, in->token_ids->ids[i]);
        json_array_close(w);
    }
}

/* req as a /v1/score body. */
static bool write_request(const Lmscore__V1__ScoreRequest *req, char **text, size_t *len)
{
    json_writer w;
    json_writer_init(&w);
    json_object_open(&w);
    json_key(&w, "query");
    write_input(&w, req->query);
    json_key(&w, "items");
    json_array_open(&w);
    for (size_t i = 0; i < req->n_items; i++)
        write_input(&w, req->items[i]);
    json_array_close(&w);
    json_key(&w, "label_token_ids");
    json_array_open(&w);
    for (size_t i = 0; i < req->n_label_token_ids; i++)
        json_int(&w, req->label_token_ids[i]);
    json_array_close(&w);
    json_key(&w, "label_texts");
    json_array_open(&w);
    for (size_t i = 0; i < req->n_label_texts; i++)
        json_string(&w, req->label_texts[i]);
    json_array_close(&w);
    json_key(&w, "apply_softmax");
    json_boolean(&w, req->apply_softmax);
    json_key(&w, "item_first");
    json_boolean(&w, req->item_first);
    json_key(&w, "return_logprobs");
    json_boolean(&w, req->return_logprobs);
    json_key(&w, "algorithm");
    json_int(&w, (int32_t)req->algorithm); /* the C enum may be unsigned */
    json_object_close(&w);
    return json_writer_done(&w, text, len);
}

static bool same_message(const ProtobufCMessage *a, const ProtobufCMessage *b)
{
    size_t na = protobuf_c_message_get_packed_size(a), nb = protobuf_c_message_get_packed_size(b);
    if (na != nb) return false;
    uint8_t *pa = malloc(na ? na : 1), *pb = malloc(nb ? nb : 1);
    if (!pa || !pb) abort();
    protobuf_c_message_pack(a, pa);
    protobuf_c_message_pack(b, pb);
    bool same = memcmp(pa, pb, na) == 0;
    free(pa);
    free(pb);
    return same;
}

static void score_body(const char *text, size_t len)
{
    decode_budget budget;
    decode_budget_init(&budget, BUDGET);
    Lmscore__V1__ScoreRequest *req;
    char *model;
    lms_error err = {0};
    if (json_score_request(text, len, &budget, &req, &model, &err) != LMS_OK) {
        if (!err.msg[0]) abort(); /* a failure says why */
        return;
    }
    if (budget.used > budget.limit) abort();
    check_text(model);
    check_input(req->query);
    for (size_t i = 0; i < req->n_items; i++)
        check_input(req->items[i]);
    for (size_t i = 0; i < req->n_label_texts; i++)
        check_text(req->label_texts[i]);

    char *again;
    size_t again_len;
    if (write_request(req, &again, &again_len)) {
        decode_budget big;
        decode_budget_init(&big, (int64_t)1 << 30);
        Lmscore__V1__ScoreRequest *back;
        char *no_model;
        if (json_score_request(again, again_len, &big, &back, &no_model, &err) != LMS_OK) abort();
        if (no_model || !same_message(&req->base, &back->base)) abort();
        protobuf_c_message_free_unpacked(&back->base, NULL);
        free(again);
    }
    free(model);
    protobuf_c_message_free_unpacked(&req->base, NULL);
}

static void rerank_body(rerank_dialect dialect, const char *text, size_t len)
{
    decode_budget budget;
    decode_budget_init(&budget, BUDGET);
    rerank_request rr;
    char *model;
    lms_error err = {0};
    if (json_rerank_request(dialect, text, len, &budget, &rr, &model, &err) != LMS_OK) return;
    if (budget.used > budget.limit || !rr.query || rr.top_n < 0) abort();
    check_text(model);
    check_text(rr.query);
    for (size_t i = 0; i < rr.n_documents; i++)
        check_text(rr.documents[i]);
    free(model);
    rerank_request_free(&rr);
}

static bool reader_accepts(const char *text, size_t len)
{
    json_reader r;
    json_reader_init(&r, text, len);
    json_skip(&r);
    json_end(&r);
    return !json_failed(&r);
}

static bool utf8_valid_n(const char *s, size_t len)
{
    return strlen(s) == len && utf8_valid((const unsigned char *)s);
}

/* json-c's tree as JSON text; false when a string cannot be said to the
 * reader or the tree nests deeper than the writer writes. */
static bool write_tree(json_writer *w, struct json_object *o)
{
    switch (json_object_get_type(o)) {
    case json_type_null:
        json_null(w);
        return true;
    case json_type_boolean:
        json_boolean(w, json_object_get_boolean(o));
        return true;
    case json_type_double:
        json_float(w, (float)json_object_get_double(o));
        return true;
    case json_type_int:
        json_int(w, json_object_get_int64(o));
        return true;
    case json_type_string:
        if (!utf8_valid_n(json_object_get_string(o), (size_t)json_object_get_string_len(o)))
            return false;
        json_string(w, json_object_get_string(o));
        return true;
    case json_type_array:
        json_array_open(w);
        for (size_t i = 0; i < json_object_array_length(o); i++)
            if (!write_tree(w, json_object_array_get_idx(o, i))) return false;
        json_array_close(w);
        return !w->failed;
    case json_type_object: {
        json_object_open(w);
        struct json_object_iterator it = json_object_iter_begin(o), end = json_object_iter_end(o);
        for (; !json_object_iter_equal(&it, &end); json_object_iter_next(&it)) {
            const char *key = json_object_iter_peek_name(&it);
            if (!utf8_valid((const unsigned char *)key)) return false;
            json_key(w, key);
            if (!write_tree(w, json_object_iter_peek_value(&it))) return false;
        }
        json_object_close(w);
        return !w->failed;
    }
    }
    return false;
}

static void plain_json(const char *text, size_t len)
{
    bool ours = reader_accepts(text, len);
    struct json_tokener *tok = json_tokener_new_ex(JSON_MAX_DEPTH + 1);
    char *terminated = malloc(len + 1);
    if (!tok || !terminated) abort();
    memcpy(terminated, text, len);
    terminated[len] = '\0';
    json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
    /* the NUL too, so that json-c knows the text has ended (a number at
     * the end could go on otherwise) */
    struct json_object *obj = json_tokener_parse_ex(tok, terminated, (int)len + 1);
    /* json-c stops at its value's end (its null is a NULL object); only
     * whitespace may follow */
    bool theirs = json_tokener_get_error(tok) == json_tokener_success;
    if (theirs) {
        size_t end = json_tokener_get_parse_end(tok);
        while (end < len && terminated[end] && strchr(" \t\n\r", terminated[end]))
            end++;
        theirs = end == len;
    }
    if (ours && !theirs) abort();
    json_writer w;
    json_writer_init(&w);
    char *again;
    size_t again_len;
    if (theirs && write_tree(&w, obj) && json_writer_done(&w, &again, &again_len)) {
        if (!reader_accepts(again, again_len)) abort();
        free(again);
    } else {
        json_writer_free(&w);
    }
    json_object_put(obj);
    json_tokener_free(tok);
    free(terminated);
}

/* json-c's default string hash is seeded at random, which changes the
 * coverage an input gives from one process to the next; the seedless one
 * keeps a run from a fixed seed the same run (make test's replay). */
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    return json_global_set_string_hash(JSON_C_STR_HASH_PERLLIKE);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    const char *text = (const char *)data + 1;
    size_t len = size - 1;
    switch (data[0] % 3) {
    case 0:
        score_body(text, len);
        break;
    case 1:
        for (rerank_dialect d = RERANK_COHERE; d <= RERANK_TEI; d++)
            rerank_body(d, text, len);
        break;
    default:
        plain_json(text, len);
    }
    return 0;
}
