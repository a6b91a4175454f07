/* dialect_memo.c - classifying a stream's events from the one before.
 *
 * The token chunks of one streamed response differ only in their text:
 * vLLM's, for one, repeat the id, object, created, model, choice index and
 * null logprobs and finish_reason around a new "content" string. When an
 * event's text was exactly one string value of its data, the memo keeps
 * the bytes before that string's inside (prefix, ending with its opening
 * quote), those after (suffix, from its closing quote) and the event's
 * result. A later event that starts with the prefix, ends with the suffix
 * and has a valid string inside between them is the same JSON document but
 * for that string's value, and the readers use that value only as text
 * (dialect_internal.h: sink_add). So its result is the memo's with the
 * text's length, hash and copy made from the new string: what a full parse
 * would give, without the parse. The strict parser's rules hold, because
 * the prefix and suffix passed it once and the string inside is checked by
 * the same rules (dj_decode_string_body). */
#include "dialect/dialect_internal.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

enum {
    MEMO_AROUND_MAX = 512, /* prefix + suffix bytes kept */
    MEMO_TYPE_MAX = 48,    /* SSE type bytes kept */
    MEMO_TEXT_MAX = 1024,  /* raw string bytes read through the memo */
};

struct tt_classify_memo {
    uint64_t hits; /* events classified from it */
    tt_dialect hint;
    size_t type_len;
    char type[MEMO_TYPE_MAX];
    uint32_t piece_flags;
    size_t prefix_len, suffix_len;
    tt_classified result;
    /* the lengths of result's strings, so that a hit copies their bytes
     * and not their arrays (a few dozen bytes of some 300) */
    uint8_t finish_len, id_len, error_len;
    unsigned char around[MEMO_AROUND_MAX]; /* the prefix, then the suffix */
};

void tt_classify_memo_free(tt_classify_memo *memo)
{
    free(memo);
}

uint64_t tt_classify_memo_hits(const tt_classify_memo *memo)
{
    return memo ? memo->hits : 0;
}

bool dialect_memo_classify(tt_classify_memo *m, tt_dialect hint, const char *type, size_t type_len,
                           const char *data, size_t data_len, tt_classified *out, char *text_out,
                           size_t text_cap)
{
    if (m->hint != hint || m->type_len != type_len || (type_len && memcmp(m->type, type, type_len))) return false;
    if (data_len <= m->prefix_len + m->suffix_len) return false;
    size_t inside = data_len - m->prefix_len - m->suffix_len;
    if (inside > MEMO_TEXT_MAX || memcmp(data, m->around, m->prefix_len) != 0 ||
        memcmp(data + data_len - m->suffix_len, m->around + m->prefix_len, m->suffix_len) != 0)
        return false;
    unsigned char text[MEMO_TEXT_MAX + 1];
    size_t n;
    if (!dj_decode_string_body((const unsigned char *)data + m->prefix_len, inside, text, &n) || n == 0)
        return false; /* an empty text would make another kind: the full parse says which */
    /* the memo's result with its one piece of text replaced, counted as
     * the readers count it */
    memcpy(out, &m->result, offsetof(tt_classified, finish_reason));
    memcpy(out->finish_reason, m->result.finish_reason, (size_t)m->finish_len + 1);
    memcpy(out->response_id, m->result.response_id, (size_t)m->id_len + 1);
    memcpy(out->error_message, m->result.error_message, (size_t)m->error_len + 1);
    out->text_bytes = 0;
    out->reasoning_bytes = 0;
    text_sink sink = { .out = out, .text_out = text_out, .text_cap = text_cap, .hash = DJ_FNV_OFFSET };
    if (text_out && text_cap) text_out[0] = 0;
    sink_add(&sink, (const char *)text, n, m->piece_flags);
    out->text_hash = sink.hash;
    m->hits++;
    return true;
}

/* The end of the string whose inside starts at data[start]: the offset of
 * its closing quote (the data parsed, so there is one). */
static size_t closing_quote(const char *data, size_t data_len, size_t start)
{
    size_t i = start;
    while (i < data_len && data[i] != '"') i += data[i] == '\\' ? 2 : 1;
    return i;
}

void dialect_memo_remember(tt_classify_memo **memo, tt_dialect hint, const char *type, size_t type_len,
                           const char *data, size_t data_len, const tt_classified *out,
                           const dialect_piece *piece)
{
    if (piece->offset == SIZE_MAX || type_len > MEMO_TYPE_MAX) return;
    size_t close = closing_quote(data, data_len, piece->offset);
    if (close >= data_len || piece->offset + (data_len - close) > MEMO_AROUND_MAX) return;
    tt_classify_memo *m = *memo;
    if (!m) {
        if (!(m = *memo = malloc(sizeof *m))) return;
        m->hits = 0;
    }
    m->hint = hint;
    m->type_len = type_len;
    if (type_len) memcpy(m->type, type, type_len);
    m->piece_flags = piece->flags;
    m->prefix_len = piece->offset;
    m->suffix_len = data_len - close;
    memcpy(m->around, data, m->prefix_len);
    memcpy(m->around + m->prefix_len, data + close, m->suffix_len);
    m->result = *out;
    m->finish_len = (uint8_t)strnlen(out->finish_reason, sizeof out->finish_reason - 1);
    m->id_len = (uint8_t)strnlen(out->response_id, sizeof out->response_id - 1);
    m->error_len = (uint8_t)strnlen(out->error_message, sizeof out->error_message - 1);
    m->result.finish_reason[m->finish_len] = 0;
    m->result.response_id[m->id_len] = 0;
    m->result.error_message[m->error_len] = 0;
}
