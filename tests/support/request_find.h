/* request_find.h - look a request up in a tracker's results by the
 * x-request-id it carried (the tracker tests name their requests so). */
#ifndef TT_TEST_REQUEST_FIND_H
#define TT_TEST_REQUEST_FIND_H

#include <stddef.h>

#include "timeline/request.h"

/* The first of the n requests at reqs whose request_id is id; NULL when none. */
const tt_request *tt_test_request_by_id(const tt_request *reqs, size_t n, const char *id);

#endif
