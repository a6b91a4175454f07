/* probe_source.h - the client (and tls) vantage from the LD_PRELOAD probe
 * (probe/probe.c, probe/probe_abi.h).
 *
 * Reads the ring files the probe writes into one directory (one per
 * process image), live while the program runs or after the fact, and turns
 * every record into tt_chunk records: CLIENT vantage for a socket the
 * process connected, SERVER vantage for one it accepted, TLS vantage for
 * the plaintext of SSL_read/SSL_write on either. A socket first seen
 * mid-life (neither connect nor accept traced) gets its role guessed,
 * orientation_guessed set: read first = server, wrote first = client.
 *
 * One connection per (pid, socket inode, layer): dup'd fds of one socket
 * share it, a forked child gets its own. The peer's direction ends cleanly
 * (TT_CHUNK_FIN) when a read returned end of file (at the TLS layer: when
 * SSL_read met close_notify or the socket's end of file). The connection
 * ends when the last fd the probe saw naming it is closed: the local end's
 * sending direction with FIN, a direction not yet ended with END, then
 * RELEASE; or at finish (END, RELEASE). Bytes the probe dropped (ring
 * full) or did not copy become TT_CHUNK_GAP chunks, never silence.
 *
 * Instants (docs/probe.md): bytes the program sent are stamped when its
 * call was entered (the record's enter_ns, as eBPF stamps writes), bytes
 * it received when the call returned (ts_ns).
 *
 * The rings are shared with the traced program: every record is checked
 * against the ring's bounds before use, and a ring that contradicts itself
 * is abandoned (counted in bad_rings), never trusted. */
#ifndef TT_PROBE_SOURCE_H
#define TT_PROBE_SOURCE_H

#include "core/tt_types.h"

typedef struct tt_probe_source tt_probe_source;

typedef struct tt_probe_stats {
    uint64_t rings;           /* ring files read */
    uint64_t bad_rings;       /* ring files refused or abandoned as inconsistent */
    uint64_t records;         /* records handled */
    uint64_t bad_records;     /* records inconsistent with themselves (skipped) */
    uint64_t unfinished_bytes;/* ring bytes reserved but never completed when read for the last time */
    uint64_t connections;     /* connection instances seen */
    uint64_t data_bytes;      /* bytes delivered as TT_CHUNK_DATA */
    uint64_t gaps, gap_bytes; /* TT_CHUNK_GAP chunks delivered */
    uint64_t closes;          /* connections ended by the close of their last fd */
    /* the probes' own counters, summed over rings (read at each poll) */
    uint64_t drop_records;    /* records that did not fit in a full ring */
    uint64_t drop_bytes;      /* data bytes in those records */
    uint64_t untracked_fds;   /* calls on fds beyond the probe's fd table */
    uint64_t processes;       /* distinct pids seen */
} tt_probe_stats;

/* A source delivering CLIENT chunks to on_client, SERVER chunks to
 * on_server, and the TLS plaintext of connections it connected to
 * on_client_tls and of connections it accepted to on_server_tls; any fn
 * may be NULL to drop that vantage. NULL when out of memory. */
tt_probe_source *tt_probe_source_new(tt_chunk_fn on_client, void *client_ctx, tt_chunk_fn on_server,
                                     void *server_ctx, tt_chunk_fn on_client_tls, void *client_tls_ctx,
                                     tt_chunk_fn on_server_tls, void *server_tls_ctx);

/* Read the ring files of dir (polls look for new ones at most every 20
 * ms, tt_probe_source_finish once more). With
 * remove_done, a ring whose process is gone is deleted once drained (the
 * collector of a live run owns the directory). 0, or -1 with a reason. */
int tt_probe_source_open_dir(tt_probe_source *s, const char *dir, bool remove_done, char *err, size_t errlen);

/* Look for new ring files (when the last look is 20 ms old or more), then
 * deliver every complete record of every ring and hand the space back to
 * the producers. Never blocks. Returns the number of records handled
 * (when deferring: taken out of the rings). */
size_t tt_probe_source_poll(tt_probe_source *s);

/* Deferred delivery, for a consumer that needs the chunks no sooner than
 * at tt_probe_source_finish (`tokentap run` without the eBPF vantage: its
 * report comes after CMD exits), so that the collector takes as little
 * CPU as it can from the program while it runs. From now on a poll takes
 * records out of a ring only when it is at least a quarter full or its
 * process is gone, and holds them (copies, in the order taken) instead of
 * delivering them; when holding the next would pass max_bytes, the oldest
 * held records are delivered first, a block (2 MiB) at a time, and the
 * block is kept for the next ones; polls that find no ring a quarter full
 * make the blocks ahead (one each, up to max_bytes' worth and one), their
 * pages touched; finish delivers the rest before its own work. The chunks
 * and their order are the same as without. max_bytes 0: deliver at once
 * (the default). A poll every 10 ms keeps up with a ring of 4 MiB or more
 * (docs/probe.md). */
void tt_probe_source_defer(tt_probe_source *s, size_t max_bytes);

/* Convert records stamped with the TSC (TT_PROBE_F_TSC) to CLOCK_MONOTONIC
 * from now on, with pairs of the two clocks taken at each poll
 * (userspace/clocks/tsc_clock.h; the first two now, 2 ms apart). True
 * when this machine's TSC can stand in for CLOCK_MONOTONIC and the
 * converter was made: then `tokentap run` asks its probes for TSC stamps
 * (TT_PROBE_CLOCK_ENV). Without it, a TSC-stamped record is a bad record. */
bool tt_probe_source_use_tsc(tt_probe_source *s);

/* Handle one record (struct tt_probe_rec + data) of process pid, as the
 * poller does; exposed for tests. 0, or -1 for a bad record. */
int tt_probe_source_feed(tt_probe_source *s, uint32_t pid, const void *rec, size_t len);

/* A last poll, then: bytes reserved but never completed are counted as
 * unfinished, and every open connection ends (END both ways, RELEASE). */
void tt_probe_source_finish(tt_probe_source *s);

/* The fullest ring as the last poll found it (before draining it), in
 * thousandths of its capacity: how soon the next poll is needed. */
unsigned tt_probe_source_last_fill(const tt_probe_source *s);

/* A ring filled this far (thousandths: a quarter) is drained at the next
 * poll even when deferring, and a caller seeing a last fill this high
 * should poll again without pausing. */
#define TT_PROBE_SOURCE_PRESSING_PERMILLE 250u

/* Counters so far. */
void tt_probe_source_stats(const tt_probe_source *s, tt_probe_stats *out);

/* Finish if not done, unmap every ring and free. NULL is fine. */
void tt_probe_source_free(tt_probe_source *s);

#endif
