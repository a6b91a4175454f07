/* main.c - the tokentap command: dispatch to one subcommand per file in cmd/. */
#include <stdio.h>
#include <string.h>

#include "cmd/commands.h"
#include "core/tt_types.h"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: tokentap COMMAND [OPTIONS] ...\n"
            "\n"
            "Passive timing of streamed LLM completions (HTTP SSE / NDJSON).\n"
            "\n"
            "commands:\n"
            "  analyze   reconstruct streams from a capture; per-request TTFT/ITL/TPOT/E2EL\n"
            "  audit     grade a benchmark tool's numbers against serve's truth, per framing and load\n"
            "  lint      framing and protocol findings that make benchmark clients mis-measure\n"
            "  record    every vantage (server, client, wire) of a live exchange into a directory\n"
            "  run       run a command with the probe preloaded (no root): its client vantage\n"
            "  serve     a streaming server of known emission instants, for tests\n"
            "  watch     live server/client vantages of a process, from eBPF (root)\n"
            "  version   print the version\n"
            "\n"
            "Run 'tokentap COMMAND --help' for a command's options.\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return TT_EXIT_USAGE;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "analyze")) return tt_cmd_analyze(argc - 1, argv + 1);
    if (!strcmp(cmd, "audit")) return tt_cmd_audit(argc - 1, argv + 1);
    if (!strcmp(cmd, "lint")) return tt_cmd_lint(argc - 1, argv + 1);
    if (!strcmp(cmd, "record")) return tt_cmd_record(argc - 1, argv + 1);
    if (!strcmp(cmd, "run")) return tt_cmd_run(argc - 1, argv + 1);
    if (!strcmp(cmd, "serve")) return tt_cmd_serve(argc - 1, argv + 1);
    if (!strcmp(cmd, "watch")) return tt_cmd_watch(argc - 1, argv + 1);
    if (!strcmp(cmd, "version") || !strcmp(cmd, "--version")) {
        printf("tokentap %s\n", TT_VERSION);
        return TT_EXIT_OK;
    }
    if (!strcmp(cmd, "help") || !strcmp(cmd, "--help") || !strcmp(cmd, "-h")) {
        usage(stdout);
        return TT_EXIT_OK;
    }
    fprintf(stderr, "tokentap: unknown command '%s' (try 'tokentap --help')\n", cmd);
    return TT_EXIT_USAGE;
}
