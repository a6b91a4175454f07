/* audit_causes.c - the causes that need more than one cell: why a tool
 * counted failed a request whose every token reached it. The evidence is
 * the findings (docs/framing.md) its failed requests carried that none of
 * the requests it counted successful did, in any cell (and of those, the
 * ones known to break a client's parsing, when there are any); without a
 * success to compare with, only the findings known to break parsing. */
#include <stdio.h>
#include <string.h>

#include "audit/audit_internal.h"

/* Findings that make some known client fail a request (docs/framing.md). */
static const char *const breaking[] = {
    "crlf-separator", "usage-empty-choices", "data-no-space", "raw-line-separator", "bom",  "non-json-data",
    "event-field",    "empty-data-line",     "error-event",   "http-error-status",  "closed-mid-event",
    "compressed-stream", "split-event",
};

static bool in_set(const char *set, const char *id)
{
    size_t k = strlen(id);
    for (const char *p = set; (p = strstr(p, id)) != NULL; p += k)
        if ((p == set || p[-1] == ',') && (p[k] == ',' || p[k] == 0)) return true;
    return false;
}

static bool is_breaking(const char *id)
{
    for (size_t i = 0; i < sizeof breaking / sizeof breaking[0]; i++)
        if (!strcmp(breaking[i], id)) return true;
    return false;
}

int tt_audit_cross_causes(tt_audit_card *card, const tt_cell_evidence *ev)
{
    char ok_anywhere[4096] = "";
    for (size_t i = 0; i < card->n_cells; i++) {
        if (!ev[i].ok_findings[0]) continue;
        size_t used = strlen(ok_anywhere);
        snprintf(ok_anywhere + used, sizeof ok_anywhere - used, "%s%s", used ? "," : "", ev[i].ok_findings);
    }
    bool have_successes = false;
    for (size_t i = 0; i < card->n_cells; i++) have_successes |= card->cells[i].reported_ok > 0;

    for (size_t i = 0; i < card->n_cells; i++) {
        tt_audit_cell *c = &card->cells[i];
        if (!c->failed_but_delivered) continue;
        char said[220] = "";
        if (ev[i].failed_error[0]) snprintf(said, sizeof said, " (the tool said: \"%.160s\")", ev[i].failed_error);
        /* the findings that set the failures apart; of those, the ones
         * known to break parsing when there are any */
        char apart[1024] = "";
        bool any_breaking = false;
        char copy[1024];
        snprintf(copy, sizeof copy, "%s", ev[i].failed_findings);
        for (char *save = NULL, *id = strtok_r(copy, ",", &save); id; id = strtok_r(NULL, ",", &save)) {
            if (have_successes ? in_set(ok_anywhere, id) : !is_breaking(id)) continue;
            size_t used = strlen(apart);
            snprintf(apart + used, sizeof apart - used, "%s%s", used ? "," : "", id);
            any_breaking |= is_breaking(id);
        }
        int named = 0;
        for (char *save = NULL, *id = strtok_r(apart, ",", &save); id; id = strtok_r(NULL, ",", &save)) {
            if (any_breaking && !is_breaking(id)) continue;
            int rc = have_successes
                         ? tt_audit_add_cause(c, id, c->failed_but_delivered,
                                              "counted failed although every token reached the client socket; "
                                              "these streams show %s and none the tool counted successful did%s",
                                              id, said)
                         : tt_audit_add_cause(c, id, c->failed_but_delivered,
                                              "counted failed although every token reached the client socket; "
                                              "these streams show %s, which breaks known clients%s",
                                              id, said);
            if (rc < 0) return -1;
            named++;
        }
        if (!named && tt_audit_add_cause(c, "", c->failed_but_delivered,
                                         "counted failed although every token reached the client socket; no "
                                         "framing finding sets these streams apart%s", said) < 0)
            return -1;
    }
    for (size_t i = 0; i < card->n_cells; i++)
        if (!card->cells[i].within_tolerance) card->mis_measured = true;
    return 0;
}
