/* fuzz_audit.c - libFuzzer harness for audit's grading (userspace/audit/):
 * the input is three files cut at the first two "\n\x01\n" markers: serve's
 * log, `tokentap run --json`'s report, the tool's result file. Each goes to
 * a memfd the grader reads by path. Checks: no crash or overrun, grading
 * never fails but for memory, the counts hold together, every statistic is
 * finite, the cause texts are terminated, and the card's three writers
 * (text, JSON, HTML) take whatever came out. */
#include <assert.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "audit/audit.h"
#include "audit/audit_internal.h"

static int file_of(const uint8_t *data, size_t len, char *path, size_t cap)
{
    int fd = memfd_create("fuzz_audit", 0);
    assert(fd >= 0);
    size_t off = 0;
    while (off < len) {
        ssize_t w = write(fd, data + off, len - off);
        assert(w > 0);
        off += (size_t)w;
    }
    snprintf(path, cap, "/proc/self/fd/%d", fd);
    return fd;
}

static void stat_ok(const tt_audit_stat *s)
{
    if (s->n) assert(isfinite(s->mean) && isfinite(s->median) && isfinite(s->p99));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char mark[] = "\n\x01\n";
    const uint8_t *part[3] = {data, data, data};
    size_t len[3] = {size, 0, 0};
    for (int k = 1; k < 3; k++) {
        const uint8_t *from = part[k - 1];
        size_t left = (size_t)(data + size - from);
        const uint8_t *m = memmem(from, left, mark, 3);
        if (!m) break;
        len[k - 1] = (size_t)(m - from);
        part[k] = m + 3;
        len[k] = (size_t)(data + size - part[k]);
    }
    char paths[3][64];
    int fds[3];
    for (int k = 0; k < 3; k++) fds[k] = file_of(part[k], len[k], paths[k], sizeof paths[k]);

    tt_audit_card card = {.ttft_ms = 20, .itl_ms = 5, .tokens = 16, .tolerance_ms = 1, .tolerance_pct = 5};
    card.cells = calloc(1, sizeof *card.cells);
    assert(card.cells);
    card.n_cells = 1;
    tt_audit_cell *c = &card.cells[0];
    snprintf(c->profile, sizeof c->profile, "vllm");
    c->concurrency = 1;
    tt_cell_evidence ev;
    tt_cell_inputs in = {.serve_log = paths[0], .run_report = paths[1], .result_path = paths[2],
                         .tolerance_ms = 1, .tolerance_pct = 5};
    assert(tt_audit_grade_cell(c, &in, &ev) == 0);
    assert(tt_audit_cross_causes(&card, &ev) == 0);

    assert(c->records_matched <= c->records && c->reported_ok <= c->records);
    assert(c->failed_but_delivered + c->ok_but_undelivered <= c->records_matched);
    assert(c->n_ttft_err <= c->records_matched);
    assert(strnlen(c->cmd_problem, sizeof c->cmd_problem) < sizeof c->cmd_problem);
    if (!c->graded) assert(c->n_causes == 0 && !c->within_tolerance);
    stat_ok(&c->err_ttft);
    stat_ok(&c->err_itl);
    stat_ok(&c->err_tpot);
    stat_ok(&c->err_e2el);
    for (size_t i = 0; i < c->n_causes; i++) {
        assert(strnlen(c->causes[i].symptom, sizeof c->causes[i].symptom) < sizeof c->causes[i].symptom);
        assert(strnlen(c->causes[i].finding, sizeof c->causes[i].finding) < sizeof c->causes[i].finding);
        assert(c->causes[i].symptom[0]);
    }
    FILE *null = fopen("/dev/null", "w");
    assert(null);
    assert(tt_audit_write_text(null, &card) == 0);
    assert(tt_audit_write_json(null, &card) == 0);
    assert(tt_audit_write_html(null, &card) == 0);
    fclose(null);
    tt_audit_card_free(&card);
    for (int k = 0; k < 3; k++) close(fds[k]);
    return 0;
}
