/*
 * commands.h — the subcommands of the lmscore CLI. Each takes its own argv
 * (argv[0] is the subcommand's name) and returns the process exit status
 * (CLI_EXIT_* of cli_args.h).
 */
#ifndef LMSCORE_CLI_COMMANDS_H
#define LMSCORE_CLI_COMMANDS_H

int cmd_score(int argc, char **argv);
int cmd_stream(int argc, char **argv);
int cmd_rerank(int argc, char **argv);
int cmd_tokenize(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_health(int argc, char **argv);
int cmd_bench(int argc, char **argv);

#endif
