/*
 * cli_args.h — command-line parsing shared by every subcommand: the
 * connection options every command takes (--target, --tls, ...) plus groups
 * of command options described by tables, from which the usage text is
 * generated too.
 */
#ifndef LMSCORE_CLI_ARGS_H
#define LMSCORE_CLI_ARGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "rpc.h"

/* Process exit statuses of every subcommand. */
enum { CLI_EXIT_OK = 0, CLI_EXIT_FAILED = 1, CLI_EXIT_USAGE = 2 };

typedef struct {
    const char *name; /* long option, without the leading "--" */
    const char *arg;  /* the argument's name in the usage; NULL for a switch */
    const char *help;
} cli_option;

/* Receives one parsed option: its index in the group's table and its value
 * (NULL for a switch). Returns false, having said why on stderr, when the
 * value is bad. */
typedef bool (*cli_option_fn)(void *ctx, size_t index, const char *value);

typedef struct {
    const char *title; /* the heading of the group in the usage */
    const cli_option *options;
    size_t count;
    cli_option_fn handle;
    void *ctx;
} cli_group;

typedef struct {
    const char *name;     /* "score" */
    const char *operands; /* "[FILE]", or "" */
    const char *summary;
    int min_operands, max_operands;
} cli_command;

/* Parses argv (argv[0] is the command's name); conn holds the command's
 * defaults on entry. True when the command should run, its operands from
 * argv[*first] on. Otherwise *exit_status is what the process exits with:
 * CLI_EXIT_OK after --help printed the usage, CLI_EXIT_USAGE after a usage
 * error (explained on stderr). */
bool cli_parse(const cli_command *cmd, const cli_group *groups, size_t n_groups, int argc,
               char **argv, rpc_options *conn, int *first, int *exit_status);

/* The connection defaults: $LMSCORE_TARGET or 127.0.0.1:50051, plaintext. */
rpc_options cli_default_connection(double timeout_s);

/* Strict number parsing for option values; false (with a message) when
 * value is not a number in [min, max]. */
bool cli_parse_long(const char *option, const char *value, long min, long max, long *out);
bool cli_parse_double(const char *option, const char *value, double min, double max, double *out);

#endif
