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

#endif
