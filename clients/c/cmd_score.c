/*
 * cmd_score.c — `lmscore score`: one Score call over items given on the
 * command line; prints a TSV table (or the response as JSON) and the
 * algorithm the server chose.
 */
#include <stdio.h>

#include "cli_args.h"
#include "commands.h"
#include "inputs.h"
#include "methods.h"
#include "pb_json.h"
#include "score_output.h"
#include "score_spec.h"

enum { OPT_ITEM, OPT_ITEM_IDS };

static const cli_option ITEM_OPTIONS[] = {
    [OPT_ITEM] = {"item", "TEXT", "an item as text; repeatable"},
    [OPT_ITEM_IDS] = {"item-ids", "IDS", "an item as token ids, e.g. 4,5,6; repeatable"},
};

static const cli_command SCORE_COMMAND = {
    .name = "score",
    .operands = "",
    .summary = "Scores items against a query with one Score call: for each item, how likely\n"
               "each label token is to come next after query ++ item.",
};

static bool handle_item(void *ctx, size_t index, const char *value)
{
    Lmscore__V1__Input *item =
        index == OPT_ITEM ? input_from_text(value) : input_from_token_ids(value, "--item-ids");
    return input_list_push(ctx, item);
}

static void print_response(const Lmscore__V1__ScoreResponse *resp, const score_spec *spec)
{
    if (spec->json) {
        output_json_line(stdout, pb_to_json(&resp->base));
        return;
    }
    output_header_tsv(stdout, resp->label_token_ids, resp->n_label_token_ids,
                      spec->return_logprobs);
    for (size_t i = 0; i < resp->n_items; i++)
        output_item_tsv(stdout, (int64_t)i, resp->items[i]);
    output_call_summary(resp->algorithm, resp->algorithm_reason, resp->usage, resp->timing);
}

static int run(const score_spec *spec, const input_list *items, const rpc_options *opts)
{
    Lmscore__V1__ScoreRequest req = LMSCORE__V1__SCORE_REQUEST__INIT;
    score_spec_to_request(spec, &req);
    req.items = items->items;
    req.n_items = items->count;
    ProtobufCMessage *resp;
    if (!rpc_unary_once(opts, "score", METHOD_SCORE, &req.base,
                        &lmscore__v1__score_response__descriptor, &resp))
        return CLI_EXIT_FAILED;
    print_response((Lmscore__V1__ScoreResponse *)resp, spec);
    protobuf_c_message_free_unpacked(resp, NULL);
    return CLI_EXIT_OK;
}

int cmd_score(int argc, char **argv)
{
    score_spec spec = {0};
    input_list items = {0};
    rpc_options opts = cli_default_connection(30);
    cli_group groups[] = {
        score_spec_options(&spec),
        {"items", ITEM_OPTIONS, sizeof ITEM_OPTIONS / sizeof ITEM_OPTIONS[0], handle_item, &items},
    };
    int first, status;
    if (cli_parse(&SCORE_COMMAND, groups, 2, argc, argv, &opts, &first, &status)) {
        status = score_spec_complete(&spec, "score") ? run(&spec, &items, &opts) : CLI_EXIT_USAGE;
    }
    input_list_free(&items);
    score_spec_free(&spec);
    return status;
}
