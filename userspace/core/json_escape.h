/* json_escape.h - which bytes of a JSON string value need an escape, and
 * what the escape is. One rule for every JSON writer of the project
 * (report/json_writer.c, core/sbuf.c): '"', '\\', the control bytes below
 * 0x20 and DEL (0x7f) are escaped; every other byte, UTF-8 or not, goes
 * out as it is. */
#ifndef TT_JSON_ESCAPE_H
#define TT_JSON_ESCAPE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* True when byte c goes into a JSON string only as an escape. */
static inline int tt_json_needs_escape(unsigned char c)
{
    return c < 0x20 || c == '"' || c == '\\' || c == 0x7f;
}

/* Nonzero exactly when one of the 8 bytes of x needs an escape (their
 * order in x does not matter; which bits are set says nothing about
 * where: a borrow can flag a byte above the one that needs it). */
static inline uint64_t tt_json_word_needs_escape(uint64_t x)
{
    const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
    uint64_t quote = x ^ (ones * '"'), backslash = x ^ (ones * '\\'), del = x ^ (ones * 0x7f);
    uint64_t below_space = (x - ones * 0x20) & ~x;
    uint64_t zero_byte = ((quote - ones) & ~quote) | ((backslash - ones) & ~backslash) | ((del - ones) & ~del);
    return (below_space | zero_byte) & highs;
}

/* The same test for the 4 bytes of x. */
static inline uint32_t tt_json_word4_needs_escape(uint32_t x)
{
    const uint32_t ones = 0x01010101u, highs = 0x80808080u;
    uint32_t quote = x ^ (ones * '"'), backslash = x ^ (ones * '\\'), del = x ^ (ones * 0x7f);
    uint32_t below_space = (x - ones * 0x20) & ~x;
    uint32_t zero_byte = ((quote - ones) & ~quote) | ((backslash - ones) & ~backslash) | ((del - ones) & ~del);
    return (below_space | zero_byte) & highs;
}

/* The index of the first byte of s[from..n) that needs an escape, or n. */
static inline size_t tt_json_plain_bytes(const char *s, size_t from, size_t n)
{
    while (from < n && !tt_json_needs_escape((unsigned char)s[from])) from++;
    return from;
}

/* How many bytes from s on (of the n there) go into a JSON string as
 * they are: the index of the first that needs an escape, or n. Reads
 * whole words (8 bytes a step; a string shorter than that in two 4-byte
 * words, which may overlap; the last step of a longer one overlaps the
 * step before it), never past s + n, and looks for the place byte by
 * byte only in a word that has one. */
static inline size_t tt_json_plain_run(const char *s, size_t n)
{
    if (n >= 8) {
        size_t i = 0;
        uint64_t x;
        for (; i + 8 <= n; i += 8) {
            memcpy(&x, s + i, sizeof x);
            if (tt_json_word_needs_escape(x)) return tt_json_plain_bytes(s, i, n);
        }
        if (i == n) return n;
        memcpy(&x, s + n - 8, sizeof x);
        return tt_json_word_needs_escape(x) ? tt_json_plain_bytes(s, i, n) : n;
    }
    if (n >= 4) {
        uint32_t a, b;
        memcpy(&a, s, sizeof a);
        memcpy(&b, s + n - 4, sizeof b);
        return tt_json_word4_needs_escape(a) || tt_json_word4_needs_escape(b) ? tt_json_plain_bytes(s, 0, n) : n;
    }
    return tt_json_plain_bytes(s, 0, n);
}

/* The escape of byte c (one tt_json_needs_escape accepts) into out:
 * \" \\ \n \r \t, else \u00XX with lowercase hex. Returns its length, 2
 * or 6. */
static inline size_t tt_json_escape_byte(unsigned char c, char out[6])
{
    static const char hex[] = "0123456789abcdef";
    out[0] = '\\';
    switch (c) {
    case '"': out[1] = '"'; return 2;
    case '\\': out[1] = '\\'; return 2;
    case '\n': out[1] = 'n'; return 2;
    case '\r': out[1] = 'r'; return 2;
    case '\t': out[1] = 't'; return 2;
    default:
        out[1] = 'u';
        out[2] = '0';
        out[3] = '0';
        out[4] = hex[c >> 4];
        out[5] = hex[c & 15];
        return 6;
    }
}

#endif
