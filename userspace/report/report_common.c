#include <stdio.h>
#include <string.h>

#include "report/report.h"

const char *tt_vantage_name(tt_vantage v)
{
    switch (v) {
    case TT_VANTAGE_WIRE: return "wire";
    case TT_VANTAGE_SERVER: return "server";
    case TT_VANTAGE_CLIENT: return "client";
    case TT_VANTAGE_TLS: return "tls";
    default: return "?";
    }
}

const char *tt_clock_name(tt_clock_domain c)
{
    return c == TT_CLOCK_MONOTONIC ? "monotonic" : "capture";
}

const char *tt_incomplete_reasons(const tt_request *r, char *buf, size_t cap)
{
    static const struct { unsigned bit; const char *name; } reasons[] = {
        {TT_INC_REQUEST_NOT_SEEN, "request-not-captured"}, {TT_INC_REQUEST_CUT, "request-cut"},
        {TT_INC_NO_RESPONSE, "no-response"},               {TT_INC_RESPONSE_CUT, "response-cut"},
        {TT_INC_GAP, "gap"},                               {TT_INC_HTTP_ERROR, "http-error"},
    };
    size_t len = 0;
    buf[0] = 0;
    for (size_t i = 0; i < sizeof reasons / sizeof *reasons; i++) {
        if (!(r->incomplete & reasons[i].bit)) continue;
        int n = snprintf(buf + len, cap - len, "%s%s", len ? "," : "", reasons[i].name);
        if (n < 0 || (size_t)n >= cap - len) break;
        len += (size_t)n;
    }
    return buf;
}
