/* ready_marks.c - readable instants of one stream direction (ready_marks.h). */
#include "timeline/ready_marks.h"

#include <stdlib.h>

void tt_ready_marks_add(tt_ready_marks *m, uint64_t from, uint64_t end, uint64_t ns)
{
    if (end <= from) return;
    if (!m->ring) {
        m->ring = malloc(TT_READY_MARKS_MAX * sizeof *m->ring);
        if (!m->ring) abort();
    }
    if (m->n == TT_READY_MARKS_MAX) {
        m->head = (m->head + 1) % TT_READY_MARKS_MAX;
        m->n--;
        m->dropped++;
    }
    m->ring[(m->head + m->n) % TT_READY_MARKS_MAX] = (tt_ready_span){.from = from, .end = end, .ns = ns};
    m->n++;
}

uint64_t tt_ready_marks_at(tt_ready_marks *m, uint64_t off)
{
    while (m->n && m->ring[m->head].end <= off) {
        m->head = (m->head + 1) % TT_READY_MARKS_MAX;
        m->n--;
    }
    if (!m->n || m->ring[m->head].from > off) return UINT64_MAX;
    return m->ring[m->head].ns;
}

void tt_ready_marks_free(tt_ready_marks *m)
{
    free(m->ring);
    m->ring = NULL;
    m->head = m->n = 0;
}
