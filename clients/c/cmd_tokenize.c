/*
 * cmd_tokenize.c — `lmscore tokenize`: the server's token ids of a text.
 */
#include <stdio.h>

#include "cli_args.h"
#include "commands.h"
#include "methods.h"
#include "pb_json.h"
#include "score_output.h"

enum { OPT_SPECIAL, OPT_JSON };

static const cli_option TOKENIZE_OPTIONS[] = {
    [OPT_SPECIAL] = {"special", NULL, "add the model's special tokens (as a query gets)"},
    [OPT_JSON] = {"json", NULL, "print the response as JSON"},
};

static const cli_command TOKENIZE_COMMAND = {
    .name = "tokenize",
    .operands = "TEXT",
    .summary = "Prints the token ids of TEXT under the served model's tokenizer.",
    .min_operands = 1,
    .max_operands = 1,
};

typedef struct {
    bool special;
    bool json;
} tokenize_options;

static bool handle_option(void *ctx, size_t index, const char *value)
{
    (void)value;
    tokenize_options *o = ctx;
    if (index == OPT_SPECIAL) o->special = true;
    if (index == OPT_JSON) o->json = true;
    return true;
}

static void print_ids(const Lmscore__V1__TokenizeResponse *resp)
{
    for (size_t i = 0; i < resp->n_token_ids; i++)
        printf("%s%d", i ? " " : "", (int)resp->token_ids[i]);
    putchar('\n');
}

int cmd_tokenize(int argc, char **argv)
{
    tokenize_options o = {0};
    rpc_options opts = cli_default_connection(30);
    cli_group group = {"options", TOKENIZE_OPTIONS, 2, handle_option, &o};
    int first, status;
    if (!cli_parse(&TOKENIZE_COMMAND, &group, 1, argc, argv, &opts, &first, &status)) return status;

    Lmscore__V1__TokenizeRequest req = LMSCORE__V1__TOKENIZE_REQUEST__INIT;
    req.text = argv[first];
    req.add_special_tokens = o.special;
    ProtobufCMessage *resp;
    if (!rpc_unary_once(&opts, "tokenize", METHOD_TOKENIZE, &req.base,
                        &lmscore__v1__tokenize_response__descriptor, &resp))
        return CLI_EXIT_FAILED;
    if (o.json)
        output_json_line(stdout, pb_to_json(resp));
    else
        print_ids((Lmscore__V1__TokenizeResponse *)resp);
    protobuf_c_message_free_unpacked(resp, NULL);
    return CLI_EXIT_OK;
}
