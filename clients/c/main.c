/*
 * main.c — the lmscore CLI: picks the subcommand and runs it between
 * grpc_init and grpc_shutdown.
 */
#include <stdio.h>
#include <string.h>

#include <grpc/grpc.h>

#include "cli_args.h"
#include "commands.h"

typedef struct {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} subcommand;

static const subcommand SUBCOMMANDS[] = {
    {"score", cmd_score, "score items against a query (Score)"},
    {"stream", cmd_stream, "score the items of a file or stdin as they stream (ScoreItems)"},
    {"rerank", cmd_rerank, "rank documents by relevance to a query (Rerank)"},
    {"tokenize", cmd_tokenize, "the token ids of a text (Tokenize)"},
    {"info", cmd_info, "the served model, limits and counters (GetModelInfo)"},
    {"health", cmd_health, "exit 0 iff the server is SERVING (grpc.health.v1)"},
    {"bench", cmd_bench, "closed-loop load generator: throughput and latency"},
};
enum { N_SUBCOMMANDS = sizeof SUBCOMMANDS / sizeof SUBCOMMANDS[0] };

static void usage(FILE *out)
{
    fprintf(out, "usage: lmscore COMMAND [options]\n\ncommands:\n");
    for (size_t i = 0; i < N_SUBCOMMANDS; i++)
        fprintf(out, "  %-10s %s\n", SUBCOMMANDS[i].name, SUBCOMMANDS[i].summary);
    fprintf(out, "\n`lmscore COMMAND --help` lists a command's options. Exit status: 0 success,\n"
                 "1 the call failed (the server's reason is printed), 2 bad usage.\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return CLI_EXIT_USAGE;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "help") == 0) {
        usage(stdout);
        return CLI_EXIT_OK;
    }
    if (strcmp(argv[1], "--version") == 0) {
        printf("lmscore %s (gRPC %s)\n", LMSCORE_VERSION, grpc_version_string());
        return CLI_EXIT_OK;
    }
    for (size_t i = 0; i < N_SUBCOMMANDS; i++) {
        if (strcmp(argv[1], SUBCOMMANDS[i].name) != 0) continue;
        grpc_init();
        int status = SUBCOMMANDS[i].run(argc - 1, argv + 1);
        grpc_shutdown();
        return status;
    }
    fprintf(stderr, "lmscore: unknown command \"%s\"\n", argv[1]);
    usage(stderr);
    return CLI_EXIT_USAGE;
}
