#include "source/seg_lane.h"

#include <pthread.h>
#include <stdlib.h>

enum { LANE_BATCHES = 8, BATCH_SEGS = 2048 };

typedef struct seg_batch {
    size_t n;
    tt_tcp_segment segs[BATCH_SEGS];
} seg_batch;

struct tt_seg_lane {
    pthread_mutex_t lock;
    pthread_cond_t not_empty, not_full;
    seg_batch *batches;     /* LANE_BATCHES, a ring: head .. head + queued - 1 are the consumer's */
    size_t head, queued;
    seg_batch *filling;     /* the producer's batch (the slot after the queued ones), or NULL */
    bool closed;
    uint64_t end_ns;
};

tt_seg_lane *tt_seg_lane_new(void)
{
    tt_seg_lane *l = calloc(1, sizeof *l);
    if (!l) return NULL;
    l->batches = malloc(LANE_BATCHES * sizeof *l->batches);
    if (!l->batches) {
        free(l);
        return NULL;
    }
    pthread_mutex_init(&l->lock, NULL);
    pthread_cond_init(&l->not_empty, NULL);
    pthread_cond_init(&l->not_full, NULL);
    return l;
}

/* Queue the filling batch for the consumer. */
static void hand_over(tt_seg_lane *l)
{
    pthread_mutex_lock(&l->lock);
    l->queued++;
    pthread_cond_signal(&l->not_empty);
    pthread_mutex_unlock(&l->lock);
    l->filling = NULL;
}

void tt_seg_lane_push(tt_seg_lane *l, const tt_tcp_segment *seg)
{
    if (!l->filling) {
        pthread_mutex_lock(&l->lock);
        while (l->queued == LANE_BATCHES) pthread_cond_wait(&l->not_full, &l->lock);
        l->filling = &l->batches[(l->head + l->queued) % LANE_BATCHES];
        pthread_mutex_unlock(&l->lock);
        l->filling->n = 0;
    }
    l->filling->segs[l->filling->n++] = *seg;
    if (l->filling->n == BATCH_SEGS) hand_over(l);
}

void tt_seg_lane_close(tt_seg_lane *l, uint64_t end_ns)
{
    if (l->filling) hand_over(l);
    pthread_mutex_lock(&l->lock);
    l->closed = true;
    l->end_ns = end_ns;
    pthread_cond_signal(&l->not_empty);
    pthread_mutex_unlock(&l->lock);
}

void tt_seg_lane_drain(tt_seg_lane *l, tt_reasm *r)
{
    for (;;) {
        pthread_mutex_lock(&l->lock);
        while (!l->queued && !l->closed) pthread_cond_wait(&l->not_empty, &l->lock);
        if (!l->queued) { /* closed and empty */
            uint64_t end_ns = l->end_ns;
            pthread_mutex_unlock(&l->lock);
            tt_reasm_finish(r, end_ns);
            return;
        }
        seg_batch *b = &l->batches[l->head];
        pthread_mutex_unlock(&l->lock);
        for (size_t i = 0; i < b->n; i++) tt_reasm_segment(r, &b->segs[i]);
        pthread_mutex_lock(&l->lock);
        l->head = (l->head + 1) % LANE_BATCHES;
        l->queued--;
        pthread_cond_signal(&l->not_full);
        pthread_mutex_unlock(&l->lock);
    }
}

void tt_seg_lane_free(tt_seg_lane *l)
{
    if (!l) return;
    pthread_mutex_destroy(&l->lock);
    pthread_cond_destroy(&l->not_empty);
    pthread_cond_destroy(&l->not_full);
    free(l->batches);
    free(l);
}
