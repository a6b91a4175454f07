#include "tt_types.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

char *tt_endpoint_format(const tt_endpoint *ep, char *buf, size_t buflen)
{
    char addr[INET6_ADDRSTRLEN] = "?";
    if (ep->family == 6) {
        inet_ntop(AF_INET6, ep->addr, addr, sizeof addr);
        snprintf(buf, buflen, "[%s]:%u", addr, ep->port);
    } else {
        inet_ntop(AF_INET, ep->addr, addr, sizeof addr);
        snprintf(buf, buflen, "%s:%u", addr, ep->port);
    }
    return buf;
}
