/*
 * cli_args.c — getopt_long over the connection options and a command's
 * option tables, usage text from the same tables, strict number parsing.
 */
#include "cli_args.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

enum {
    OPT_TARGET = 1,
    OPT_TLS,
    OPT_CA_CERT,
    OPT_AUTHORITY,
    OPT_ROUND_ROBIN,
    OPT_TIMEOUT,
    OPT_API_KEY_FILE,
    OPT_REQUEST_ID,
    OPT_METADATA,
    OPT_HELP
};

static const cli_option CONNECTION_OPTIONS[] = {
    {"target", "ADDR", "server address (default $LMSCORE_TARGET or 127.0.0.1:50051)"},
    {"tls", NULL, "use TLS, trusting the system's root certificates"},
    {"ca-cert", "FILE", "use TLS, trusting the PEM roots in FILE"},
    {"authority", "NAME", "TLS: the server name to verify instead of ADDR's host"},
    {"round-robin", NULL, "spread calls over every address ADDR resolves to"},
    {"timeout", "SECONDS", "deadline of each call (0: none)"},
    {"api-key-file", "FILE", "send the API key in FILE (default $LMSCORE_API_KEY)"},
    {"request-id", "ID", "send x-request-id: ID (the server's logs name the call by it)"},
    {"metadata", "KEY=VALUE", "send this call metadata too; repeatable"},
    {"help", NULL, "show this help"},
};
enum { N_CONNECTION_OPTIONS = sizeof CONNECTION_OPTIONS / sizeof CONNECTION_OPTIONS[0] };

/* getopt_long values of command options: group in the high bits. */
enum { GROUP_BASE = 0x100, GROUP_STRIDE = 0x100 };

rpc_options cli_default_connection(double timeout_s)
{
    const char *target = getenv("LMSCORE_TARGET");
    rpc_options opts = {.target = target && *target ? target : "127.0.0.1:50051",
                        .timeout_s = timeout_s};
    return opts;
}

static void print_options(FILE *out, const char *title, const cli_option *opts, size_t n)
{
    fprintf(out, "\n%s:\n", title);
    for (size_t i = 0; i < n; i++) {
        char left[64];
        snprintf(left, sizeof left, "--%s%s%s", opts[i].name, opts[i].arg ? " " : "",
                 opts[i].arg ? opts[i].arg : "");
        fprintf(out, "  %-24s %s\n", left, opts[i].help);
    }
}

static void print_usage(const cli_command *cmd, const cli_group *groups, size_t n_groups, FILE *out)
{
    fprintf(out, "usage: lmscore %s [options]%s%s\n%s\n", cmd->name, *cmd->operands ? " " : "",
            cmd->operands, cmd->summary);
    for (size_t g = 0; g < n_groups; g++)
        print_options(out, groups[g].title, groups[g].options, groups[g].count);
    print_options(out, "connection", CONNECTION_OPTIONS, N_CONNECTION_OPTIONS);
}

static bool add_metadata(const char *pair, rpc_options *conn)
{
    char why[160];
    if (conn->n_metadata == RPC_MAX_METADATA) {
        fprintf(stderr, "lmscore: at most %d --metadata options\n", RPC_MAX_METADATA);
        return false;
    }
    if (!rpc_metadata_check(pair, why, sizeof why)) {
        fprintf(stderr, "lmscore: --metadata: %s\n", why);
        return false;
    }
    conn->metadata[conn->n_metadata++] = pair;
    return true;
}

/* The server replaces an id that is not 1 to 128 visible ASCII characters
 * (docs/api.md): the CLI refuses one rather than send it in vain. */
static bool add_request_id(const char *id, rpc_options *conn)
{
    size_t len = strlen(id);
    bool visible = len >= 1 && len <= 128;
    for (size_t i = 0; visible && i < len; i++)
        visible = id[i] >= '!' && id[i] <= '~';
    if (!visible) {
        fprintf(stderr,
                "lmscore: --request-id wants 1 to 128 visible ASCII characters, not "
                "\"%s\"\n",
                id);
        return false;
    }
    conn->request_id = id;
    return true;
}

static bool handle_connection_option(int id, const char *value, rpc_options *conn)
{
    switch (id) {
    case OPT_TARGET:
        conn->target = value;
        return true;
    case OPT_TLS:
        conn->tls = true;
        return true;
    case OPT_CA_CERT:
        conn->ca_cert = value;
        conn->tls = true;
        return true;
    case OPT_AUTHORITY:
        conn->authority = value;
        return true;
    case OPT_ROUND_ROBIN:
        conn->round_robin = true;
        return true;
    case OPT_TIMEOUT:
        return cli_parse_double("--timeout", value, 0, 1e7, &conn->timeout_s);
    case OPT_API_KEY_FILE:
        conn->api_key_file = value;
        return true;
    case OPT_REQUEST_ID:
        return add_request_id(value, conn);
    case OPT_METADATA:
        return add_metadata(value, conn);
    }
    return false;
}

static void to_getopt(const cli_option *opt, int val, struct option *out)
{
    out->name = opt->name;
    out->has_arg = opt->arg ? required_argument : no_argument;
    out->flag = NULL;
    out->val = val;
}

/* getopt_long over all options; 0, -1 (usage error) or -2 (--help done). */
static int parse_options(const cli_command *cmd, const cli_group *groups, size_t n_groups, int argc,
                         char **argv, rpc_options *conn)
{
    size_t total = N_CONNECTION_OPTIONS;
    for (size_t g = 0; g < n_groups; g++)
        total += groups[g].count;
    struct option *longopts = calloc(total + 1, sizeof *longopts);
    if (!longopts) {
        fprintf(stderr, "lmscore: out of memory\n");
        return -1;
    }
    size_t k = 0;
    for (size_t i = 0; i < N_CONNECTION_OPTIONS; i++)
        to_getopt(&CONNECTION_OPTIONS[i], OPT_TARGET + (int)i, &longopts[k++]);
    for (size_t g = 0; g < n_groups; g++)
        for (size_t i = 0; i < groups[g].count; i++)
            to_getopt(&groups[g].options[i], GROUP_BASE + (int)(g * GROUP_STRIDE + i),
                      &longopts[k++]);

    int result = 0;
    optind = 1;
    opterr = 0;
    int c;
    while (result == 0 && (c = getopt_long(argc, argv, ":", longopts, NULL)) != -1) {
        if (c == '?' || c == ':') {
            fprintf(stderr, "lmscore %s: %s option %s\n", cmd->name,
                    c == '?' ? "unknown" : "missing the value of", argv[optind - 1]);
            result = -1;
        } else if (c == OPT_HELP) {
            print_usage(cmd, groups, n_groups, stdout);
            result = -2;
        } else if (c < GROUP_BASE) {
            if (!handle_connection_option(c, optarg, conn)) result = -1;
        } else {
            size_t g = (size_t)(c - GROUP_BASE) / GROUP_STRIDE;
            size_t i = (size_t)(c - GROUP_BASE) % GROUP_STRIDE;
            if (!groups[g].handle(groups[g].ctx, i, optarg)) result = -1;
        }
    }
    free(longopts);
    return result;
}

bool cli_parse(const cli_command *cmd, const cli_group *groups, size_t n_groups, int argc,
               char **argv, rpc_options *conn, int *first, int *exit_status)
{
    int result = parse_options(cmd, groups, n_groups, argc, argv, conn);
    int operands = argc - optind;
    if (result == 0 && (operands < cmd->min_operands || operands > cmd->max_operands)) {
        fprintf(stderr, "lmscore %s: expected %s%s\n", cmd->name,
                *cmd->operands ? "operands " : "no operands", *cmd->operands ? cmd->operands : "");
        result = -1;
    }
    if (result == -1) fprintf(stderr, "(see: lmscore %s --help)\n", cmd->name);
    *first = optind;
    *exit_status = result == -2 ? CLI_EXIT_OK : CLI_EXIT_USAGE;
    return result == 0;
}

bool cli_parse_long(const char *option, const char *value, long min, long max, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(value, &end, 10);
    if (errno || end == value || *end != '\0' || v < min || v > max) {
        fprintf(stderr, "lmscore: %s wants an integer in [%ld, %ld], not \"%s\"\n", option, min,
                max, value);
        return false;
    }
    *out = v;
    return true;
}

bool cli_parse_double(const char *option, const char *value, double min, double max, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(value, &end);
    if (errno || end == value || *end != '\0' || !isfinite(v) || v < min || v > max) {
        fprintf(stderr, "lmscore: %s wants a number in [%g, %g], not \"%s\"\n", option, min, max,
                value);
        return false;
    }
    *out = v;
    return true;
}
