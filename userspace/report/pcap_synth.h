/* pcap_synth.h - write a vantage seen at the socket (eBPF chunks) as a
 * nanosecond pcap of synthesized raw-IP TCP packets (LINKTYPE_RAW), so
 * Wireshark opens it and `tokentap analyze` reassembles it.
 *
 * Each connection gets a SYN/SYN-ACK/ACK at its first chunk, every data
 * chunk becomes PSH|ACK segments at seq = ISN + 1 + chunk offset stamped
 * with the chunk's instant (so a gap is a sequence jump), FIN and RST
 * chunks become FIN|ACK and RST|ACK. A READY mark becomes an ACK without
 * payload at seq = ISN + 1 + the end of its bytes, carrying their count in
 * the experimental option of tcp_reasm.h. Where the source knew the
 * kernel's TCP sequence numbers (tt_conn_info.seq_known), a sequence mark
 * before a direction's first bytes says them (the synthesized ones stay).
 * IPv4 header and TCP checksums are valid. */
#ifndef TT_PCAP_SYNTH_H
#define TT_PCAP_SYNTH_H

#include <stdint.h>

#include "core/tt_types.h"

typedef struct tt_synth tt_synth;

/* Create path (mode 0600, must not exist). NULL with a reason in err. */
tt_synth *tt_synth_open(const char *path, char *err, size_t errlen);

/* A tt_chunk_fn: ctx is the tt_synth. Writes the chunk's packets. */
void tt_synth_chunk(void *ctx, const tt_chunk *c);

/* Packets written so far; write errors so far. */
uint64_t tt_synth_packets(const tt_synth *s);

/* Flush, close and free. 0, or -1 when some write failed. NULL is fine. */
int tt_synth_close(tt_synth *s);

#endif
