/* http2_internal.h - the HTTP/2 parser's state, shared by http2.c (frames,
 * streams, settings) and http2_hpack.c (the header blocks: HPACK through
 * nghttp2's inflater). Internal to proto/. */
#ifndef TT_HTTP2_INTERNAL_H
#define TT_HTTP2_INTERNAL_H

#include <nghttp2/nghttp2.h>

#include "proto/http2.h"

#define PENDING_MAX 8u
#define CTL_MAX 512u          /* SETTINGS (85 entries), GOAWAY debug data kept */
#define DEFAULT_WINDOW 65535
#define DEFAULT_TABLE 4096u
#define MAX_FRAME_LIMIT 16777215u
#define MAX_WINDOW 2147483647u

enum dstate { D_PREFACE, D_HEAD, D_PAYLOAD, D_DEAD, D_CLOSED };

typedef struct half {
    bool ended, no_report;
    bool final_head;          /* a non-interim HEADERS was reported */
    uint64_t body_off, data_frames, pad_bytes, header_blocks, last_ns;
    uint32_t wu_count;        /* WINDOW_UPDATEs the receiver of this half sent */
    uint64_t wu_credit;
    int64_t window;           /* the sender's stream send window */
} half;

typedef struct h2_stream {
    uint32_t id;
    half h[2];
} h2_stream;

typedef struct pending_settings {
    bool has_hts, has_mfs, has_iws;
    uint32_t hts_min, hts_last, mfs, iws;
} pending_settings;

typedef struct h2_dir {
    enum dstate state;
    tt_h2_end dead_how;
    uint64_t dead_off, dead_ns;
    uint64_t off;             /* stream offset of the next byte */
    size_t preface_got;
    bool expect_settings;     /* the first frame must be SETTINGS */

    /* the frame being read */
    uint8_t fh[9];
    size_t fh_got;
    uint32_t len, sid, got;
    uint8_t type, flags;
    uint64_t frame_off, frame_ns;
    uint32_t pre_need, pre_got, pad, content_end;
    uint8_t pre[6];
    bool frame_created, frame_late;
    uint8_t ctl[CTL_MAX];
    size_t ctl_len;
    uint8_t *dbuf;
    size_t dlen, dcap;

    /* the header block being gathered */
    bool in_block;
    uint8_t *hb;
    size_t hb_len, hb_cap, hb_total;
    bool hb_over;
    uint32_t hb_sid, hb_promised;
    uint8_t hb_type, hb_flags;
    bool hb_prio, hb_excl;
    uint32_t hb_dep;
    uint16_t hb_weight;
    uint64_t hb_first_off, hb_first_ns;
    unsigned hb_frames;

    /* HPACK: decodes this direction's header blocks */
    nghttp2_hd_inflater *inf;
    bool tolerant;
    uint32_t hp_settings;     /* what nghttp2's inflater was given */
    uint32_t hp_min;          /* a size update up to this is required first (UINT32_MAX: none) */
    uint32_t hp_ctx_max;      /* the inflater's table size now */
    uint32_t hp_announced;    /* the value announced, before the cap */
    uint8_t *rw;
    size_t rw_cap;
    tt_h2_header *hdrs;
    size_t nhdrs, hdrs_cap;
    char *arena;
    size_t arena_len, arena_cap;
    bool hdr_truncated;
    size_t hdr_unknown;

    /* settings the receiver of this direction announced, applied at its ACK */
    bool max_frame_known;
    uint32_t max_frame;
    uint32_t init_window;
    int64_t conn_window;      /* the sender's connection send window */
    /* SETTINGS sent in this direction, awaiting the ACK in the other */
    pending_settings pend[PENDING_MAX];
    size_t npend;

    tt_h2_dir_stats st;
} h2_dir;

struct tt_http2_conn {
    tt_http2_callbacks cb;
    void *ud;
    bool midstream, upgraded;
    h2_dir d[2];
    h2_stream **streams;      /* sorted by id */
    size_t nstreams, streams_cap;
    uint32_t highest[2];      /* highest stream id opened: [0] by the client (odd), [1] by the server (even) */
    uint32_t closed_ring[TT_HTTP2_CLOSED_RING];
    size_t closed_pos, closed_n;
    char msg[160];
};

static inline uint32_t be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static inline tt_direction other(tt_direction d) { return d == TT_DIR_C2S ? TT_DIR_S2C : TT_DIR_C2S; }

/* Whether a direction is still read (not abandoned, not ended). */
static inline bool alive(const h2_dir *d) { return d->state != D_DEAD && d->state != D_CLOSED; }

/* ---- http2_streams.c ---- */

h2_stream *stream_find(const tt_http2_conn *c, uint32_t id);
/* A stream ended lately (its later frames are late, not an error). */
bool recently_closed(const tt_http2_conn *c, uint32_t id);
void stream_remove(tt_http2_conn *c, uint32_t id);
/* End one half (dir) of s, how (code for RST_STREAM/GOAWAY), by the frame
 * of direction `by` at off/ns; returns true when the stream is then forgotten. */
bool end_half(tt_http2_conn *c, h2_stream *s, tt_direction dir, tt_h2_end how, uint32_t code, tt_direction by,
              uint64_t off, uint64_t ns);
/* End both halves still open; the stream is forgotten. */
void end_stream_both(tt_http2_conn *c, h2_stream *s, tt_h2_end how, uint32_t code, tt_direction by, uint64_t off,
                     uint64_t ns);
/* A new stream id opened by direction by; at TT_HTTP2_MAX_STREAMS the
 * lowest id is evicted first (its halves end LIMIT). NULL when out of memory. */
h2_stream *stream_create(tt_http2_conn *c, uint32_t id, tt_direction by, uint64_t off, uint64_t ns);
/* A stream created while a direction is abandoned or ended: its half in
 * that direction ends at once. */
void settle_new_stream(tt_http2_conn *c, uint32_t id);
/* Abandon direction dir (code, msg at off): on_error, then every open half
 * of it ends (ERROR, or GAP). failf formats msg. */
void fail(tt_http2_conn *c, tt_direction dir, tt_h2_error code, const char *msg, uint64_t off, uint64_t ns);
void failf(tt_http2_conn *c, tt_direction dir, tt_h2_error code, uint64_t off, uint64_t ns, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));

enum resolve_result { R_OK, R_LATE, R_ERROR };
/* The stream a HEADERS (headers) or DATA frame of dir names, created when
 * the frame may open it (*created); R_LATE for a stream already ended,
 * R_ERROR after failing the direction. */
enum resolve_result resolve(tt_http2_conn *c, tt_direction dir, uint32_t id, bool headers, h2_stream **out,
                            bool *created, uint64_t ns);

/* ---- http2_settings.c ---- */

/* The entries of a SETTINGS payload b[0, n) into out (n / 6 of them). */
size_t parse_settings(const uint8_t *b, size_t n, tt_h2_setting *out);
/* What SETTINGS entries change once acknowledged (the least and last
 * header table size, a valid max frame size and initial window). */
void collect_settings(const tt_h2_setting *s, size_t n, pending_settings *p);
/* Settings announced by the receiver of direction dir, acknowledged: its
 * decoder's table size, frame size limit and stream windows. */
void apply_settings(tt_http2_conn *c, tt_direction dir, const pending_settings *p);

/* ---- http2_hpack.c ---- */

/* Give direction d's inflater the table size a midstream capture needs
 * (the cap, size updates clamped) or the exact one the settings give. 0,
 * or -1 when nghttp2 could not make one. */
int hp_make_tolerant(h2_dir *d);
int hp_make_exact(h2_dir *d);
/* A SETTINGS_HEADER_TABLE_SIZE acknowledged: its least and last values. */
void hp_apply_settings(h2_dir *d, uint32_t vmin, uint32_t vlast);
/* Decode the header block b[0, n) of direction d into d's fields (unknown
 * indexes reported unknown); 0, or -1 on an HPACK error (c's message set). */
int hp_decode(tt_http2_conn *c, h2_dir *d, const uint8_t *b, size_t n);
/* The :status of a response head (0 when absent or not 3 digits). */
int status_of(const tt_h2_headers *h);

#endif
