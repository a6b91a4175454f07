/* protobuf_wire.h - a small reader of the protobuf wire format.
 *
 * Enough to walk a serialized message field by field without a schema or
 * generated code: tags, varints, fixed 32/64-bit values, length-delimited
 * slices and packed repeated varints. Nothing is allocated and nothing is
 * copied; every read is checked against the end of the buffer, and any
 * malformed input (a varint longer than 10 bytes or past 64 bits, a length
 * past the end, a field number of 0 or above 2^29-1, groups, wire types 3,
 * 4, 6, 7) puts the reader in an error state instead of reading further. */
#ifndef TT_PROTOBUF_WIRE_H
#define TT_PROTOBUF_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum pb_wire_type {
    PB_WT_VARINT = 0,
    PB_WT_I64 = 1,
    PB_WT_LEN = 2,
    PB_WT_I32 = 5,
} pb_wire_type;

#define PB_MAX_FIELD_NUMBER 536870911u /* 2^29 - 1 */

/* One field as it sits on the wire. For VARINT, I64 and I32 the value is
 * in `value` (I64/I32 read little-endian, as raw bits); for LEN `data` and
 * `len` are the slice inside the reader's buffer (value is 0). */
typedef struct pb_field {
    uint32_t number;
    pb_wire_type type;
    uint64_t value;
    const uint8_t *data;
    size_t len;
} pb_field;

/* A cursor over one message's bytes. `error` is set once and stays set. */
typedef struct pb_reader {
    const uint8_t *p;
    const uint8_t *end;
    bool error;
} pb_reader;

/* Start reading buf[0..len). buf may be NULL only when len is 0. */
void pb_reader_init(pb_reader *r, const uint8_t *buf, size_t len);

/* Read the next field into *f. True when one was read; false at the clean
 * end of the buffer (r->error false) or on malformed input (r->error true,
 * and every later call returns false too). *f is only valid after true. */
bool pb_next_field(pb_reader *r, pb_field *f);

/* Decode one varint from *p (not reading at or past end): true and *p moved
 * past it, or false (truncated, more than 10 bytes, or more than 64 bits of
 * value) with *p unchanged. */
bool pb_read_varint(const uint8_t **p, const uint8_t *end, uint64_t *out);

/* Walk a packed repeated varint field (the LEN slice data[0..len)): call
 * with *pos 0 first; true and the next value in *out while values remain,
 * false at the end or on a malformed varint (then *bad is set when bad is
 * non-NULL). The slice must hold whole varints only. */
bool pb_packed_varint_next(const uint8_t *data, size_t len, size_t *pos, uint64_t *out, bool *bad);

/* How many varints a packed slice holds; -1 when it does not hold a whole
 * number of well-formed varints. */
long pb_packed_varint_count(const uint8_t *data, size_t len);

/* A repeated scalar varint field may come packed (one LEN field) or not
 * (one VARINT field per value): the number of values that f adds, -1 when
 * f is malformed or of another wire type. */
long pb_repeated_varint_count(const pb_field *f);


#endif
