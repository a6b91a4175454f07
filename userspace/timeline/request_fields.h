/* request_fields.h - what a request body asked for (model, stream, the
 * output-length limit under any of its spellings, min_tokens, ignore_eos,
 * stream_options.include_usage). */
#ifndef TT_REQUEST_FIELDS_H
#define TT_REQUEST_FIELDS_H

#include "timeline/request.h"

/* Reset f to "nothing known". */
void tt_request_fields_init(tt_request_fields *f);

/* Read the fields from a JSON request body. Bodies that are not a JSON
 * object leave the fields unknown with body_json_ok false. Looks at the top
 * level and at the nested objects TGI ("parameters") and Ollama ("options")
 * use. */
void tt_request_fields_parse(tt_request_fields *f, const char *body, size_t len);

#endif
