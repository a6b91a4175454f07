#include "request_find.h"

#include <string.h>

const tt_request *tt_test_request_by_id(const tt_request *reqs, size_t n, const char *id)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(reqs[i].request_id, id)) return &reqs[i];
    return NULL;
}
