/* serve_native.h - frames of the profiles that speak an API of their own
 * (responses, anthropic, tgi, llamacpp, ollama); used by serve_profile.c,
 * which owns request parsing and the event plan. */
#ifndef TT_SERVE_NATIVE_H
#define TT_SERVE_NATIVE_H

#include <stdbool.h>

#include "core/sbuf.h"
#include "serve/serve_profile.h"

/* Lifecycle steps: tt_serve_event.token of the META events in a plan. */
enum {
    TT_RESP_CREATED = 0, TT_RESP_IN_PROGRESS, TT_RESP_ITEM_ADDED, TT_RESP_PART_ADDED, /* before the tokens */
    TT_RESP_TEXT_DONE, TT_RESP_PART_DONE, TT_RESP_ITEM_DONE,                          /* after them */
    TT_RESP_RS_ITEM_ADDED, TT_RESP_RS_PART_ADDED,                   /* the reasoning item (--reasoning-tokens) */
    TT_RESP_RS_TEXT_DONE, TT_RESP_RS_PART_DONE, TT_RESP_RS_ITEM_DONE,
};
enum {
    TT_ANTH_MESSAGE_START = 0, TT_ANTH_BLOCK_START, TT_ANTH_PING, TT_ANTH_BLOCK_STOP,
    TT_ANTH_THINK_START, TT_ANTH_SIGNATURE, TT_ANTH_THINK_STOP, /* the thinking block (--reasoning-tokens) */
};

/* Append one event's bytes for prof (one of the native profiles) without the
 * final separator, which the caller adds. */
void tt_serve_native_frame(const tt_serve_profile *prof, const tt_serve_request *req,
                           const tt_serve_event *ev, tt_sbuf *out);
/* Append the non-streamed body for prof; false (nothing appended) when prof
 * is not a native profile. */
bool tt_serve_native_full_body(const tt_serve_profile *prof, const tt_serve_request *req, tt_sbuf *out);

#endif
