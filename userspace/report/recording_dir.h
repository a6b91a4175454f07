/* recording_dir.h - pieces of a recording directory (docs/formats.md,
 * "the recording directory") shared by the commands that write one:
 * the wall-to-monotonic clock offset, the manifest's common head, and the
 * wire vantage captured with libpcap into wire.pcap. */
#ifndef TT_RECORDING_DIR_H
#define TT_RECORDING_DIR_H

#include <pcap/pcap.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "report/json_writer.h"
#include "source/bpf_source.h"

/* wall - mono in ns: CLOCK_REALTIME read between two CLOCK_MONOTONIC reads,
 * the tightest of five tries; *mono_out gets the midpoint of the monotonic
 * pair, *wall_out the wall reading. */
int64_t tt_recdir_sample_offset(uint64_t *mono_out, uint64_t *wall_out);

/* The instants every manifest carries. */
typedef struct tt_recdir_clock {
    uint64_t start_mono, end_mono, start_wall, end_wall;
    int64_t start_offset, end_offset;
} tt_recdir_clock;

/* Create path (mode 0600, must not exist), start a pretty JSON object in w
 * with "tokentap" {version, schema: "tokentap.record/1", command} and the
 * clock fields (start/end mono and wall, wall_to_mono_offset_ns). The
 * caller adds its own fields and calls tt_recdir_manifest_close. NULL with
 * errno set when the file cannot be created. */
/* Which CLOCK_MONOTONIC this process reads: the boot's id and its time
 * namespace ("<boot_id>/time:[inode]"). Two recordings with the same id
 * share one clock (docs/clocks.md, method same-host). */
void tt_recdir_clock_id(char *out, size_t cap);

FILE *tt_recdir_manifest_open(const char *path, tt_jw *w, const char *command, const tt_recdir_clock *clock);

/* End the object and close the file. 0, or -1 when some write failed. */
int tt_recdir_manifest_close(FILE *out, tt_jw *w);

/* The wire vantage: libpcap on one interface into a pcap file. */
typedef struct tt_recdir_wire {
    pcap_t *p;
    pcap_dumper_t *dumper;
    char skipped[PCAP_ERRBUF_SIZE + 128]; /* why there is no capture ("" when capturing) */
    struct pcap_stat stats;
    bool have_stats;
} tt_recdir_wire;

/* Start capturing on iface (filter "tcp port PORT" when port is not 0)
 * into path (created 0600, must not exist), nonblocking, nanosecond
 * timestamps. Needs root; on any failure w->skipped says why and nothing is
 * captured. */
void tt_recdir_wire_start(tt_recdir_wire *w, const char *path, const char *iface, uint16_t port);

/* Write every packet captured so far. */
void tt_recdir_wire_drain(tt_recdir_wire *w);

/* Drain, read the kernel's counters into w->stats, close. 0, or -1 when
 * writing the file failed. */
int tt_recdir_wire_stop(tt_recdir_wire *w);

/* Write {"received", "dropped", "if_dropped"} under key, or null when
 * there were no counters. */
void tt_recdir_wire_stats_json(tt_jw *jw, const char *key, const tt_recdir_wire *w);

/* Write the eBPF source's counters (docs/formats.md, manifest "drops.ebpf")
 * as an object under key. */
void tt_recdir_bpf_stats_json(tt_jw *jw, const char *key, const tt_bpf_stats *b);

#endif
