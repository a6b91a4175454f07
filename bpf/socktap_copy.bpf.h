/* SPDX-License-Identifier: GPL-2.0 */
/* socktap_copy.bpf.h - part of socktap.bpf.c (included there, one object):
 * the walk that copies what one data syscall moved into ring-buffer
 * records, for the cases the single-buffer fast path does not take: an
 * iovec array, an mmsghdr array, more than TT_SOCKTAP_MAX_COPY bytes, bytes
 * owed after a refused record. Its state lives in the per-CPU scratch map
 * value (struct scratch_rec, socktap.bpf.c), so that bpf_loop's verifier
 * pass checks one step without tracking its counters from step to step. */

/* The current message is over: when some of its bytes were not copied, say
 * so with a record without data (or, once the ring buffer refused a record,
 * owe them to the next record of this socket and direction). */
static __always_inline void finish_message(struct copy_state *st, struct tt_socktap_event *ev, __u8 why)
{
    if (st->done >= st->total) return;
    __u32 missing = st->total - st->done;
    if (st->rb_failed) {
        st->lost += missing;
        return;
    }
    if (why & TT_SOCKTAP_F_NOT_COPIED) {
        stat_add(TT_SOCKTAP_STAT_NOT_COPIED, 1);
        stat_add(TT_SOCKTAP_STAT_NOT_COPIED_BYTES, missing);
    } else {
        stat_add(TT_SOCKTAP_STAT_TRUNCATED, 1);
        stat_add(TT_SOCKTAP_STAT_TRUNCATED_BYTES, missing);
    }
    ev->total_len = st->total;
    ev->piece_off = st->done;
    ev->copied = 0;
    ev->flags = st->base_flags | why | (st->failed ? TT_SOCKTAP_F_COPY_FAILED : 0);
    ev->lost_before = st->lost;
    if (bpf_ringbuf_output(&events, ev, sizeof *ev, rb_flags(sizeof *ev)) != 0) {
        stat_add(TT_SOCKTAP_STAT_RB_FAIL, 1);
        st->rb_failed = 1;
        st->lost += missing;
        return;
    }
    stat_add(TT_SOCKTAP_STAT_EVENTS, 1);
    st->lost = 0;
    st->done = st->total;
}

/* Load the next mmsghdr entry as the current message. 1: none left. */
static __always_inline long next_message(struct copy_state *st)
{
    if (st->msg_next >= st->msg_count || st->msg_next >= TT_SOCKTAP_MAX_MMSG) {
        st->walked = 1;
        return 1;
    }
    struct mmsghdr mh;
    if (bpf_probe_read_user(&mh, sizeof mh, (const void *)(st->mmsg_at + (__u64)st->msg_next * sizeof mh)) != 0) {
        st->walked = 1; /* the lengths of the rest are unknown: counted as truncated by the caller */
        return 1;
    }
    st->msg_next++;
    st->total = mh.msg_len;
    st->done = 0;
    st->pieces = 0;
    st->iov_next = 0;
    st->failed = 0;
    st->base = 0;
    st->left = 0;
    st->iov_at = (__u64)mh.msg_hdr.msg_iov;
    st->iov_count = mh.msg_hdr.msg_iovlen;
    return 0;
}

/* One step of the walk: end the current message and load the next one,
 * load the next iovec entry, or emit one piece of at most
 * TT_SOCKTAP_MAX_COPY bytes. 1 stops the loop. */
static long copy_step(__u64 index, void *unused)
{
    __u32 zero = 0;
    struct scratch_rec *rec = bpf_map_lookup_elem(&scratch, &zero);
    if (!rec) return 1;
    struct copy_state *st = &rec->st;
    if (st->rb_failed || st->failed || st->done >= st->total || st->pieces >= TT_SOCKTAP_MAX_PIECES ||
        (st->left == 0 && (st->iov_next >= st->iov_count || st->iov_next >= TT_SOCKTAP_MAX_IOV))) {
        finish_message(st, &rec->ev, TT_SOCKTAP_F_TRUNCATED);
        return next_message(st);
    }
    if (st->left == 0) {
        struct iovec iov;
        if (bpf_probe_read_user(&iov, sizeof iov, (const void *)(st->iov_at + (__u64)st->iov_next * sizeof iov)) != 0) {
            st->failed = 1;
            return 0;
        }
        st->iov_next++;
        st->base = (__u64)iov.iov_base;
        st->left = iov.iov_len;
        return 0;
    }
    __u64 len = st->left;
    if (len > st->total - st->done) len = st->total - st->done;
    /* Clamp in the very register the helper gets, for the verifier. */
    asm volatile("if %[len] <= %[max] goto +1\n\t%[len] = %[max]" : [len] "+r"(len) : [max] "i"(TT_SOCKTAP_MAX_COPY));
    if (len == 0) {
        st->failed = 1;
        return 0;
    }
    if (bpf_probe_read_user(rec->data, len, (const void *)st->base) != 0) {
        st->failed = 1;
        return 0;
    }
    __u32 n = (__u32)len;
    struct tt_socktap_event *ev = &rec->ev;
    ev->total_len = st->total;
    ev->piece_off = st->done;
    ev->copied = n;
    ev->flags = st->base_flags;
    ev->lost_before = st->lost;
    __u64 rec_bytes = sizeof(struct tt_socktap_event) + len;
    if (bpf_ringbuf_output(&events, ev, rec_bytes, rb_flags(rec_bytes)) != 0) {
        stat_add(TT_SOCKTAP_STAT_RB_FAIL, 1);
        stat_add(TT_SOCKTAP_STAT_RB_FAIL_BYTES, n);
        /* The rest of this message (and of the syscall) is owed as lost bytes. */
        st->rb_failed = 1;
        return 0;
    }
    stat_add(TT_SOCKTAP_STAT_EVENTS, 1);
    st->lost = 0;
    st->base += n;
    st->left -= n;
    st->done += n;
    st->pieces++;
    return 0;
}

struct sum_state {
    __u64 at;   /* &msgvec[first].msg_len */
    __u32 n;    /* entries to sum */
    __u32 sum;
    __u8 failed;
};

/* Add one mmsghdr entry's msg_len. */
static long sum_step(__u64 index, void *vctx)
{
    struct sum_state *ss = vctx;
    if (index >= ss->n) return 1;
    __u32 len = 0;
    if (bpf_probe_read_user(&len, sizeof len, (const void *)(ss->at + index * sizeof(struct mmsghdr))) != 0) {
        ss->failed = 1;
        return 1;
    }
    ss->sum = ss->sum + len < ss->sum ? 0xffffffffu : ss->sum + len;
    return 0;
}
