/* cmd_input.h - the input of an offline command: one capture file, or a
 * recording DIR written by `tokentap record` (docs/formats.md), read to the
 * end and analysed into one tt_analysis per vantage present. Shared by the
 * commands that read captures (lint; analyze could move here). */
#ifndef TT_CMD_INPUT_H
#define TT_CMD_INPUT_H

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
} tt_cmd_input_options;

typedef struct tt_input_run tt_input_run;

typedef struct tt_cmd_input {
    const tt_analysis *analyses[TT_VANTAGE_COUNT]; /* one per vantage read, in server, client, wire order */
    size_t n;
    bool recording;          /* path was a recording directory */
    tt_input_run *runs;        /* owned; freed by tt_cmd_input_free */
} tt_cmd_input;

/* True when path is a recording directory (a directory holding manifest.json). */
bool tt_cmd_input_is_recording(const char *path);

/* Read path into *in. Returns TT_EXIT_OK, or TT_EXIT_DAMAGED / TT_EXIT_NO_HTTP
 * with in->analyses still valid (the report covers what was read), or
 * TT_EXIT_USAGE / TT_EXIT_INPUT / TT_EXIT_INTERNAL with nothing to report.
 * Every non-OK status has printed one line on stderr. Always release with
 * tt_cmd_input_free. */
int tt_cmd_input_load(const char *path, const tt_cmd_input_options *opt, tt_cmd_input *in);
void tt_cmd_input_free(tt_cmd_input *in);

#endif
