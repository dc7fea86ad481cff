/*
 * cmd_health.c — `lmscore health`: grpc.health.v1.Health/Check. Prints the
 * serving status and exits 0 iff it is SERVING (the Docker HEALTHCHECK and
 * scripts rely on that); --wait polls until it is.
 */
#include <stdio.h>
#include <time.h>

#include "cli_args.h"
#include "commands.h"
#include "grpc/health/v1/health.pb-c.h"
#include "methods.h"
#include "clock.h"

enum { OPT_SERVICE, OPT_WAIT };

static const cli_option HEALTH_OPTIONS[] = {
    [OPT_SERVICE] = {"service", "NAME", "the service to ask about (default \"\": the server)"},
    [OPT_WAIT] = {"wait", "SECONDS", "keep asking until SERVING or SECONDS have passed"},
};

static const cli_command HEALTH_COMMAND = {
    .name = "health",
    .operands = "",
    .summary = "Asks the server's grpc.health.v1 service; exits 0 iff it is SERVING.",
};

typedef struct {
    const char *service;
    double wait_s;
} health_options;

static bool handle_option(void *ctx, size_t index, const char *value)
{
    health_options *o = ctx;
    if (index == OPT_SERVICE) {
        o->service = value;
        return true;
    }
    return cli_parse_double("--wait", value, 0, 1e6, &o->wait_s);
}

/* One Check; the serving status, or -1 when the call failed (st says why). */
static int check_once(rpc_conn *conn, const char *service, rpc_status *st)
{
    Grpc__Health__V1__HealthCheckRequest req = GRPC__HEALTH__V1__HEALTH_CHECK_REQUEST__INIT;
    req.service = (char *)service;
    ProtobufCMessage *resp;
    if (!rpc_unary(conn, METHOD_HEALTH_CHECK, &req.base,
                   &grpc__health__v1__health_check_response__descriptor, &resp, st))
        return -1;
    int status = ((Grpc__Health__V1__HealthCheckResponse *)resp)->status;
    protobuf_c_message_free_unpacked(resp, NULL);
    return status;
}

static const char *serving_status_name(int status)
{
    const ProtobufCEnumValue *v = protobuf_c_enum_descriptor_get_value(
        &grpc__health__v1__health_check_response__serving_status__descriptor, status);
    return v ? v->name : "UNKNOWN";
}

int cmd_health(int argc, char **argv)
{
    health_options o = {.service = ""};
    rpc_options opts = cli_default_connection(5);
    cli_group group = {"options", HEALTH_OPTIONS, 2, handle_option, &o};
    int first, status;
    if (!cli_parse(&HEALTH_COMMAND, &group, 1, argc, argv, &opts, &first, &status)) return status;

    rpc_conn conn;
    rpc_status st;
    if (!rpc_connect(&conn, &opts, &st)) {
        rpc_status_print("health", &st);
        return CLI_EXIT_FAILED;
    }
    const int serving = GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__SERVING;
    double give_up = monotonic_seconds() + o.wait_s;
    int serving_status;
    for (;;) {
        serving_status = check_once(&conn, o.service, &st);
        if (serving_status == serving || monotonic_seconds() >= give_up) break;
        nanosleep(&(struct timespec){.tv_nsec = 100 * 1000 * 1000}, NULL);
    }
    rpc_close(&conn);
    if (serving_status < 0) {
        rpc_status_print("health", &st);
        return CLI_EXIT_FAILED;
    }
    printf("%s\n", serving_status_name(serving_status));
    return serving_status == serving ? CLI_EXIT_OK : CLI_EXIT_FAILED;
}
