/*
 * cmd_info.c — `lmscore info`: the served model, the server's limits and
 * counters (GetModelInfo), as "key: value" lines or JSON.
 */
#include <stdio.h>

#include "cli_args.h"
#include "commands.h"
#include "methods.h"
#include "pb_json.h"
#include "score_output.h"

static const cli_option INFO_OPTIONS[] = {
    {"json", NULL, "print the response as JSON"},
};

static const cli_command INFO_COMMAND = {
    .name = "info",
    .operands = "",
    .summary = "Describes the served model, the server's limits and its counters.",
};

static bool handle_option(void *ctx, size_t index, const char *value)
{
    (void)index;
    (void)value;
    *(bool *)ctx = true;
    return true;
}

int cmd_info(int argc, char **argv)
{
    bool json = false;
    rpc_options opts = cli_default_connection(30);
    cli_group group = {"options", INFO_OPTIONS, 1, handle_option, &json};
    int first, status;
    if (!cli_parse(&INFO_COMMAND, &group, 1, argc, argv, &opts, &first, &status)) return status;

    Lmscore__V1__GetModelInfoRequest req = LMSCORE__V1__GET_MODEL_INFO_REQUEST__INIT;
    ProtobufCMessage *resp;
    if (!rpc_unary_once(&opts, "info", METHOD_GET_MODEL_INFO, &req.base,
                        &lmscore__v1__get_model_info_response__descriptor, &resp))
        return CLI_EXIT_FAILED;
    json_object *obj = pb_to_json(resp);
    protobuf_c_message_free_unpacked(resp, NULL);
    if (json) {
        output_json_line(stdout, obj);
    } else {
        pb_json_print_flat(stdout, obj, "");
        json_object_put(obj);
    }
    return CLI_EXIT_OK;
}
