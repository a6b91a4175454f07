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
#include "dialect/dialect_grpc.h"
#include "dialect/dialect_internal.h"

#include <stdlib.h>
#include <string.h>

enum {
    MEMO_AROUND_MAX = 512, /* prefix + suffix bytes kept */
    MEMO_TYPE_MAX = 48,    /* SSE type bytes kept */
    MEMO_TEXT_MAX = 1024,  /* raw string bytes read through the memo */
};

struct tt_classify_memo {
    bool valid;
    uint64_t hits; /* events classified from it */
    tt_dialect hint;
    size_t type_len;
    char type[MEMO_TYPE_MAX];
    uint32_t piece_flags;
    size_t prefix_len, suffix_len;
    tt_classified result;
    unsigned char around[MEMO_AROUND_MAX]; /* the prefix, then the suffix */
};

void tt_classify_memo_free(tt_classify_memo *memo)
{
    free(memo);
}

bool tt_classified_same(const tt_classified *a, const tt_classified *b)
{
    return a->kind == b->kind && a->has == b->has && a->json_ok == b->json_ok && a->dialect == b->dialect &&
           a->text_bytes == b->text_bytes && a->reasoning_bytes == b->reasoning_bytes &&
           a->text_hash == b->text_hash && a->usage_prompt_tokens == b->usage_prompt_tokens &&
           a->usage_completion_tokens == b->usage_completion_tokens && !strcmp(a->finish_reason, b->finish_reason) &&
           !strcmp(a->response_id, b->response_id) && !strcmp(a->error_message, b->error_message);
}

uint64_t tt_classify_memo_hits(const tt_classify_memo *memo)
{
    return memo ? memo->hits : 0;
}

/* Classify data from m when it is m's event with another text string;
 * false when it is not (then nothing was written). */
static bool classify_from_memo(const tt_classify_memo *m, tt_dialect hint, const char *type, size_t type_len,
                               const char *data, size_t data_len, tt_classified *out, char *text_out,
                               size_t text_cap)
{
    if (!m->valid || m->hint != hint || m->type_len != type_len || (type_len && memcmp(m->type, type, type_len)))
        return false;
    if (data_len <= m->prefix_len + m->suffix_len) return false;
    size_t inside = data_len - m->prefix_len - m->suffix_len;
    if (inside > MEMO_TEXT_MAX || memcmp(data, m->around, m->prefix_len) != 0 ||
        memcmp(data + data_len - m->suffix_len, m->around + m->prefix_len, m->suffix_len) != 0)
        return false;
    unsigned char text[MEMO_TEXT_MAX + 1];
    size_t n;
    if (!dj_decode_string_body((const unsigned char *)data + m->prefix_len, inside, text, &n) || n == 0)
        return false; /* an empty text would make another kind: the full parse says which */
    *out = m->result;
    out->text_bytes = (uint32_t)n;
    out->reasoning_bytes = m->piece_flags & TT_HAS_REASONING ? (uint32_t)n : 0;
    out->text_hash = dj_fnv_add(DJ_FNV_OFFSET, (const char *)text, n);
    if (text_out && text_cap) {
        size_t k = n < text_cap - 1 ? n : text_cap - 1;
        memcpy(text_out, text, k);
        text_out[k] = 0;
    }
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

/* Make *memo from an event whose one text string starts at piece->offset. */
static void remember(tt_classify_memo **memo, tt_dialect hint, const char *type, size_t type_len, const char *data,
                     size_t data_len, const tt_classified *out, const dialect_piece *piece)
{
    if (piece->offset == SIZE_MAX || type_len > MEMO_TYPE_MAX) return;
    size_t close = closing_quote(data, data_len, piece->offset);
    if (close >= data_len || piece->offset + (data_len - close) > MEMO_AROUND_MAX) return;
    tt_classify_memo *m = *memo;
    if (!m) {
        if (!(m = *memo = malloc(sizeof *m))) return;
        m->hits = 0;
    }
    m->valid = true;
    m->hint = hint;
    m->type_len = type_len;
    if (type_len) memcpy(m->type, type, type_len);
    m->piece_flags = piece->flags;
    m->prefix_len = piece->offset;
    m->suffix_len = data_len - close;
    memcpy(m->around, data, m->prefix_len);
    memcpy(m->around + m->prefix_len, data + close, m->suffix_len);
    m->result = *out;
}

void tt_dialect_classify_memo(tt_classify_memo **memo, tt_dialect hint, const char *type, size_t type_len,
                              const char *data, size_t data_len, tt_classified *out, char *text_out,
                              size_t text_cap)
{
    if ((unsigned)hint >= TT_DIALECT_COUNT) hint = TT_DIALECT_UNKNOWN;
    if (!memo || tt_grpc_api_of(hint) != TT_GRPC_API_COUNT) {
        tt_dialect_classify(hint, type, type_len, data, data_len, out, text_out, text_cap);
        return;
    }
    if (!data) data_len = 0;
    dialect_normalize_type(&type, &type_len);
    if (*memo && classify_from_memo(*memo, hint, type, type_len, data, data_len, out, text_out, text_cap)) {
        (*memo)->hits++;
        return;
    }
    dialect_piece piece;
    dialect_classify_json(hint, type, type_len, data, data_len, out, text_out, text_cap, &piece);
    remember(memo, hint, type, type_len, data, data_len, out, &piece);
}
