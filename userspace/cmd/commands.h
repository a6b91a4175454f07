/* commands.h - one entry point per subcommand; argv[0] is the subcommand name.
 * Each returns the process exit status (TT_EXIT_* in core/tt_types.h). */
#ifndef TT_COMMANDS_H
#define TT_COMMANDS_H

#include "core/version.h"

int tt_cmd_analyze(int argc, char **argv);
int tt_cmd_audit(int argc, char **argv);
int tt_cmd_lint(int argc, char **argv);
int tt_cmd_record(int argc, char **argv);
int tt_cmd_run(int argc, char **argv);
int tt_cmd_serve(int argc, char **argv);
int tt_cmd_watch(int argc, char **argv);

/* The LD_PRELOAD probe's path into out: $TOKENTAP_PROBE, else
 * libtokentap-probe.so next to this binary (the build tree), else
 * ../lib/tokentap/libtokentap-probe.so from this binary's directory (the
 * installed layout). 0 when it is readable, else -1 (out still names where
 * it was looked for). Shared by run and audit. */
int tt_probe_library_path(char *out, size_t cap);

#endif
