/* bench_import.h - what a benchmark tool said about each request it sent,
 * read from the tool's own result file (docs/formats.md, "Benchmark result
 * files"). One loader per tool, one common record, so that the join and the
 * decomposition never look at a tool's format.
 *
 * Units are normalised on load: every duration in ns (int64), every instant
 * in ns on the clock the tool used (start_clock says which: a
 * time.perf_counter() start is CLOCK_MONOTONIC on Linux; an epoch start is
 * wall clock and needs the recording's wall-to-monotonic offset). */
#ifndef TT_BENCH_IMPORT_H
#define TT_BENCH_IMPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum tt_bench_format {
    TT_BENCH_AUTO = 0,   /* detect from the file's content */
    TT_BENCH_VLLM,       /* vllm bench serve --save-result --save-detailed (JSON) */
    TT_BENCH_GENAI_PERF, /* genai-perf profile_export.json */
    TT_BENCH_AIPERF,     /* aiperf profile_export.jsonl */
    TT_BENCH_GUIDELLM,   /* guidellm benchmarks.json */
    TT_BENCH_SGLANG,     /* sglang bench_serving --output-details (JSONL) */
    TT_BENCH_LLMPERF,    /* llmperf *_individual_responses.json */
    TT_BENCH_FORMAT_COUNT
} tt_bench_format;

typedef enum tt_bench_clock {
    TT_BENCH_CLOCK_NONE = 0, /* the file gives no start instant */
    TT_BENCH_CLOCK_MONO,     /* CLOCK_MONOTONIC ns (time.perf_counter on Linux) */
    TT_BENCH_CLOCK_WALL,     /* ns since the Unix epoch */
} tt_bench_clock;

#define TT_BENCH_NONE INT64_MIN /* a duration or instant the file does not give */

/* One request as the benchmark recorded it. Fields the tool does not write
 * are TT_BENCH_NONE (instants, durations) or -1 (counts). */
typedef struct tt_bench_request {
    size_t index;            /* 0-based position in the file's order */
    char *request_id;        /* the id the tool sent as x-request-id, or NULL */
    tt_bench_clock start_clock;
    int64_t start_ns;        /* when the tool started the request, on start_clock */
    int64_t ttft_ns;         /* the tool's time to first token */
    int64_t e2el_ns;         /* the tool's end-to-end latency */
    int64_t *itl_ns;         /* the tool's inter-token latencies (n_itl of them), or NULL */
    size_t n_itl;
    int64_t output_tokens;   /* the tool's output token count */
    int64_t input_tokens;
    bool success;            /* false when the tool counted the request failed */
    char *error;             /* the tool's error text, or NULL */
    int64_t text_len;        /* bytes of generated text the tool kept, -1 when none */
    uint64_t text_hash;      /* FNV-1a 64 of that text (the hash tokentap uses for text), 0 when none */
} tt_bench_request;

typedef struct tt_bench_result {
    tt_bench_format format;
    char *path;
    tt_bench_request *reqs;  /* in file order */
    size_t n_reqs;
    /* The ids the tool sent do not number the file's records (genai-perf:
     * the file keeps only the requests that ended inside a measurement
     * window, per client thread in completion order), so the join must not
     * read <prefix><index> ids as record indices. */
    bool ids_not_indices;
    /* Why the records carry no id the traffic shows (a static string), or
     * NULL; the join reports it when it matched by order or start. */
    const char *id_note;
} tt_bench_result;

/* Load the result file at path as format fmt (TT_BENCH_AUTO: detect). 0 on
 * success, out filled (release with tt_bench_result_free); -1 with a
 * one-line reason in err (unreadable, not the format, a field of the wrong
 * type or unit, inconsistent array lengths), out left empty. Generated
 * text is never kept, only its length and hash. */
int tt_bench_load(const char *path, tt_bench_format fmt, tt_bench_result *out, char *err,
                  size_t errlen);

/* The same as tt_bench_load, from len bytes at data (need not be
 * NUL-terminated; never read past data+len); out->path is NULL. */
int tt_bench_load_mem(const char *data, size_t len, tt_bench_format fmt, tt_bench_result *out,
                      char *err, size_t errlen);

/* The format detected from the content (never TT_BENCH_AUTO), or -1 with
 * the reason in err. */
int tt_bench_detect_mem(const char *data, size_t len, char *err, size_t errlen);

/* Give every request of a vllm result the id vllm sent: prefix followed by
 * its index (vllm bench serve --request-id-prefix; the file does not record
 * the prefix unless it was passed as --metadata request_id_prefix=...).
 * Replaces ids already set. 0, or -1 when out of memory (ids unchanged). */
int tt_bench_set_id_prefix(tt_bench_result *r, const char *prefix);

/* Largest result file tt_bench_load reads. */
#define TT_BENCH_MAX_FILE_BYTES ((size_t)256 << 20)

/* Free everything tt_bench_load allocated in r; r becomes empty. */
void tt_bench_result_free(tt_bench_result *r);

/* "vllm", "genai-perf", "aiperf", "guidellm", "sglang", "llmperf"
 * ("auto" for TT_BENCH_AUTO). */
const char *tt_bench_format_name(tt_bench_format f);

/* The format named s (the names above), or -1. */
int tt_bench_format_parse(const char *s);

#endif
