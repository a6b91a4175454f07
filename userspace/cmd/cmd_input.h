/* cmd_input.h - the input of an offline command: one capture file, or a
 * recording DIR written by `tokentap record` (docs/formats.md), read to the
 * end and analysed into one tt_analysis per vantage present. Shared by the
 * commands that read captures (analyze, lint). */
#ifndef TT_CMD_INPUT_H
#define TT_CMD_INPUT_H

#include "join/join.h"
#include "report/report.h"

typedef struct tt_cmd_input_options {
    const char *command;     /* names the command in stderr lines: "tokentap COMMAND: ..." */
    bool keep_text;          /* tracker keeps generated text (--text) */
    bool keep_body;          /* tracker keeps response bodies (lint excerpts) */
    bool have_offset;        /* --wall-to-mono-offset given (captures only, not recordings) */
    int64_t mono_offset_ns;
    const double *pct;       /* percentiles for the summaries */
    size_t n_pct;
    bool progress;           /* a progress line on stderr while a capture file is read */
    unsigned jobs;           /* threads reading one capture file, each its share of the connections
                                (0 or 1: one; recordings and libpcap-read files: always one) */
    bool release_events;     /* a capture file's requests let go of their events once filed (their
                                ITLs and findings taken first, report/release_digest.h): only for a
                                report that reads no event afterwards (the text summary). Not for
                                recordings; off when TOKENTAP_KEEP_EVENTS is set (not "0") */
    bool release_json;       /* with release_events: the report is the JSON document; each released
                                request's object is kept in a temporary file (no file: events kept) */
    bool quiet_damage;       /* no stderr line for a file damaged part way (it was read and said before) */
    /* put every instant on another recording's clock: t + d0 + skew (t - t0)
     * (docs/clocks.md; analyze DIR DIR...) */
    bool has_clock_map;
    double map_d0_ns, map_skew;
    int64_t map_t0_ns;
} tt_cmd_input_options;

typedef struct tt_input_run tt_input_run;

typedef struct tt_cmd_input {
    const tt_analysis *analyses[TT_VANTAGE_COUNT]; /* one per vantage read, in server, client, wire order */
    size_t n;
    bool recording;          /* path was a recording directory */
    bool has_mono_offset;    /* wall - mono known: the manifest's (recording) or --wall-to-mono-offset */
    int64_t mono_offset_ns;
    char clock_id[160];      /* a recording's manifest clock_id ("" when none: older recordings) */
    tt_input_run *runs;      /* owned; freed by tt_cmd_input_free */
} tt_cmd_input;

/* The i-th analysis of in is reported as vantage v from now on (the wire
 * of a client host's recording becomes TT_VANTAGE_CLIENT_WIRE). */
void tt_cmd_input_relabel(tt_cmd_input *in, size_t i, tt_vantage v);

/* Parse the value of --wall-to-mono-offset (integer nanoseconds, wall - mono)
 * into opt->have_offset and opt->mono_offset_ns. Returns TT_EXIT_OK, or
 * TT_EXIT_USAGE after one line on stderr naming opt->command. */
int tt_cmd_input_parse_offset(tt_cmd_input_options *opt, const char *arg);

/* After getopt_long (optstring starting with ':') returned c, '?' or ':',
 * for a bad option or a missing value: says which on stderr. Returns
 * TT_EXIT_USAGE. */
int tt_cmd_option_error(const char *command, int c, char **argv);

/* The one CAPTURE|DIR operand left after the options, or NULL after a
 * line on stderr (usage error). */
const char *tt_cmd_input_operand(const char *command, int argc, char **argv);

/* True when path is a recording directory (a directory holding manifest.json). */
bool tt_cmd_input_is_recording(const char *path);

/* True when the environment asks to keep every request's events
 * (TOKENTAP_KEEP_EVENTS set, not "0"): release_events is then ignored. */
bool tt_cmd_keep_events_forced(void);

/* Read path into *in. Returns TT_EXIT_OK, or TT_EXIT_DAMAGED / TT_EXIT_NO_HTTP
 * with in->analyses still valid (the report covers what was read), or
 * TT_EXIT_USAGE / TT_EXIT_INTERNAL with nothing to report, or TT_EXIT_INPUT:
 * nothing to report when in->n is 0, else a recording some of whose vantage
 * files could not be read (in->analyses hold the others). Every non-OK
 * status has printed one line on stderr. Always release with
 * tt_cmd_input_free. */
int tt_cmd_input_load(const char *path, const tt_cmd_input_options *opt, tt_cmd_input *in);
void tt_cmd_input_free(tt_cmd_input *in);

/* How a benchmark's instants meet the clock of what in read: monotonic for
 * a recording (its wire converted with the manifest's offset), else the
 * capture's own clock with the --wall-to-mono-offset when one was given. */
tt_join_options tt_cmd_input_join_options(const tt_cmd_input *in);

/* Flush and close out (stdout is flushed, not closed), the report's output
 * named path (NULL or "-": stdout). Returns TT_EXIT_OK, or TT_EXIT_OUTPUT
 * after one line on stderr naming command. */
int tt_cmd_output_close(const char *command, FILE *out, const char *path);

#endif
