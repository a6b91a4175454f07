/* run_launch.h - how `tokentap run` starts CMD under the LD_PRELOAD
 * probe: the probe library's path (tt_probe_library_path, commands.h),
 * LD_PRELOAD with the probe first, and the probe's environment (its ring
 * directory, ring size and clock: probe/probe_abi.h) set in the child just
 * before exec. */
#ifndef TT_RUN_LAUNCH_H
#define TT_RUN_LAUNCH_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* LD_PRELOAD for CMD: the probe first, then whatever was preloaded
 * already. Malloc'd; NULL when out of memory. */
char *tt_run_preload_value(const char *probe);

/* CMD's words on out, separated by spaces. */
void tt_run_print_command(FILE *out, char **argv);

/* The child's side of the fork: LD_PRELOAD, TOKENTAP_PROBE_DIR (ring_dir),
 * the ring size (ring_kb, 0: the probe's default) and the clock (TSC
 * stamps when stamp_tsc) set, then CMD executed. Never returns: exit 127
 * when CMD is not found, 126 for any other failure, with one line on
 * stderr. */
void tt_run_exec(char **cmd_argv, const char *preload, const char *ring_dir, uint32_t ring_kb, bool stamp_tsc)
    __attribute__((noreturn));

#endif
