/*
 * cmd_rerank.c — `lmscore rerank`: one Rerank call over documents given on
 * the command line; prints the ranking as TSV (or the response as JSON).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "cli_args.h"
#include "commands.h"
#include "methods.h"
#include "pb_json.h"
#include "score_output.h"

enum {
    OPT_QUERY,
    OPT_DOCUMENT,
    OPT_TOP_N,
    OPT_TRUNCATE,
    OPT_MAX_TOKENS,
    OPT_SIDE,
    OPT_RETURN_DOCUMENTS,
    OPT_JSON,
};

static const cli_option RERANK_OPTIONS[] = {
    [OPT_QUERY] = {"query", "TEXT", "the query (required)"},
    [OPT_DOCUMENT] = {"document", "TEXT",
                      "a document; repeatable (its index is its place among them)"},
    [OPT_TOP_N] = {"top-n", "N", "print the N most relevant only (default: all)"},
    [OPT_TRUNCATE] = {"truncate", "on|off",
                      "cut a document too long for its prompt (on) or have it refused "
                      "(off) (default: the server's --truncate-documents)"},
    [OPT_MAX_TOKENS] = {"max-tokens-per-doc", "N",
                        "with truncation, cut each document to N of its own tokens"},
    [OPT_SIDE] = {"truncation-side", "right|left",
                  "which end a cut keeps: right keeps the start, left the end (default right)"},
    [OPT_RETURN_DOCUMENTS] = {"return-documents", NULL, "print each result's document too"},
    [OPT_JSON] = {"json", NULL, "print the response as JSON"},
};

static const cli_command RERANK_COMMAND = {
    .name = "rerank",
    .operands = "",
    .summary = "Ranks documents by relevance to a query with one Rerank call (the server's\n"
               "rerank profile): index, relevance and log-odds, most relevant first.",
};

typedef struct {
    const char *query;
    char **documents;
    size_t n_documents, cap;
    long top_n, max_tokens;
    Lmscore__V1__TruncateMode truncate;
    bool keep_end, return_documents, json;
} rerank_options;

static bool handle_option(void *ctx, size_t index, const char *value)
{
    rerank_options *o = ctx;
    switch (index) {
    case OPT_QUERY:
        o->query = value;
        return true;
    case OPT_DOCUMENT: {
        char *doc = (char *)value;
        if (!array_push((void **)&o->documents, &o->n_documents, &o->cap, sizeof doc, &doc)) {
            fprintf(stderr, "lmscore rerank: out of memory\n");
            return false;
        }
        return true;
    }
    case OPT_TOP_N:
        return cli_parse_long("--top-n", value, 1, INT32_MAX, &o->top_n);
    case OPT_TRUNCATE:
        if (strcmp(value, "on") != 0 && strcmp(value, "off") != 0) {
            fprintf(stderr, "lmscore rerank: --truncate: on or off, not \"%s\"\n", value);
            return false;
        }
        o->truncate = strcmp(value, "on") == 0 ? LMSCORE__V1__TRUNCATE_MODE__TRUNCATE_MODE_ON
                                               : LMSCORE__V1__TRUNCATE_MODE__TRUNCATE_MODE_OFF;
        return true;
    case OPT_MAX_TOKENS:
        return cli_parse_long("--max-tokens-per-doc", value, 1, INT32_MAX, &o->max_tokens);
    case OPT_SIDE:
        if (strcmp(value, "left") != 0 && strcmp(value, "right") != 0) {
            fprintf(stderr, "lmscore rerank: --truncation-side: right or left, not \"%s\"\n",
                    value);
            return false;
        }
        o->keep_end = strcmp(value, "left") == 0;
        return true;
    case OPT_RETURN_DOCUMENTS:
        o->return_documents = true;
        return true;
    case OPT_JSON:
        o->json = true;
        return true;
    }
    return false;
}

static void print_results(const Lmscore__V1__RerankResponse *resp, bool with_documents)
{
    printf("index\trelevance_score\tlog_odds\ttokens_dropped%s\n",
           with_documents ? "\tdocument" : "");
    for (size_t k = 0; k < resp->n_results; k++) {
        const Lmscore__V1__RerankResult *r = resp->results[k];
        printf("%d\t%.9g\t%.9g\t%d", (int)r->index, (double)r->relevance_score, (double)r->log_odds,
               (int)r->tokens_dropped);
        if (with_documents) printf("\t%s", r->document);
        putchar('\n');
    }
}

static int run(const rerank_options *o, const rpc_options *opts)
{
    Lmscore__V1__RerankRequest req = LMSCORE__V1__RERANK_REQUEST__INIT;
    Lmscore__V1__Truncation truncation = LMSCORE__V1__TRUNCATION__INIT;
    req.query = (char *)o->query;
    req.documents = o->documents;
    req.n_documents = o->n_documents;
    req.top_n = (int32_t)o->top_n;
    req.truncate = o->truncate;
    req.return_documents = o->return_documents;
    if (o->max_tokens || o->keep_end) {
        truncation.max_item_tokens = (int32_t)o->max_tokens;
        truncation.side = o->keep_end ? LMSCORE__V1__TRUNCATION_SIDE__TRUNCATION_SIDE_LEFT
                                      : LMSCORE__V1__TRUNCATION_SIDE__TRUNCATION_SIDE_RIGHT;
        req.truncation = &truncation;
    }
    ProtobufCMessage *resp;
    if (!rpc_unary_once(opts, "rerank", METHOD_RERANK, &req.base,
                        &lmscore__v1__rerank_response__descriptor, &resp))
        return CLI_EXIT_FAILED;
    if (o->json)
        output_json_line(stdout, pb_to_json(resp));
    else
        print_results((Lmscore__V1__RerankResponse *)resp, o->return_documents);
    protobuf_c_message_free_unpacked(resp, NULL);
    return CLI_EXIT_OK;
}

int cmd_rerank(int argc, char **argv)
{
    rerank_options o = {0};
    rpc_options opts = cli_default_connection(30);
    cli_group group = {"options", RERANK_OPTIONS, sizeof RERANK_OPTIONS / sizeof *RERANK_OPTIONS,
                       handle_option, &o};
    int first, status;
    if (cli_parse(&RERANK_COMMAND, &group, 1, argc, argv, &opts, &first, &status)) {
        if (!o.query) {
            fprintf(stderr, "lmscore rerank: --query is required\n");
            status = CLI_EXIT_USAGE;
        } else {
            status = run(&o, &opts);
        }
    }
    free(o.documents);
    return status;
}
