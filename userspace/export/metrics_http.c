/* metrics_http.c - /metrics over libmicrohttpd (metrics_http.h), which is
 * loaded when the first server starts (core/lazy_lib.h). */
#include "export/metrics_http.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "core/lazy_lib.h"
#include "core/util.h"

static struct {
    __typeof__(MHD_start_daemon) *start_daemon;
    __typeof__(MHD_get_daemon_info) *get_daemon_info;
    __typeof__(MHD_stop_daemon) *stop_daemon;
    __typeof__(MHD_create_response_from_buffer) *create_response_from_buffer;
    __typeof__(MHD_add_response_header) *add_response_header;
    __typeof__(MHD_queue_response) *queue_response;
    __typeof__(MHD_destroy_response) *destroy_response;
    __typeof__(MHD_lookup_connection_value) *lookup_connection_value;
} mhd;
/* The SONAME has been libmicrohttpd.so.12 since 0.9.x: the unversioned name
 * (the -dev package's) is the fallback. */
static const char *const mhd_names[] = {"libmicrohttpd.so.12", "libmicrohttpd.so", NULL};
static const tt_lazy_sym mhd_syms[] = {
    {"MHD_start_daemon", (void **)&mhd.start_daemon},
    {"MHD_get_daemon_info", (void **)&mhd.get_daemon_info},
    {"MHD_stop_daemon", (void **)&mhd.stop_daemon},
    {"MHD_create_response_from_buffer", (void **)&mhd.create_response_from_buffer},
    {"MHD_add_response_header", (void **)&mhd.add_response_header},
    {"MHD_queue_response", (void **)&mhd.queue_response},
    {"MHD_destroy_response", (void **)&mhd.destroy_response},
    {"MHD_lookup_connection_value", (void **)&mhd.lookup_connection_value},
};
static tt_lazy_lib mhd_lib = {mhd_names, "watch --metrics", mhd_syms, sizeof mhd_syms / sizeof mhd_syms[0], 0, ""};

struct tt_metrics_http {
    struct MHD_Daemon *daemon;
    tt_mreg *reg;
    uint16_t port;
    atomic_uint_least64_t scrapes;
};

static enum MHD_Result answer(struct MHD_Connection *conn, unsigned status, const char *type, char *body, size_t len,
                              bool owned)
{
    struct MHD_Response *resp =
        mhd.create_response_from_buffer(len, body, owned ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
    if (!resp) {
        if (owned) free(body);
        return MHD_NO;
    }
    mhd.add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    enum MHD_Result rc = mhd.queue_response(conn, status, resp);
    mhd.destroy_response(resp);
    return rc;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
                                  const char *version, const char *upload_data, size_t *upload_data_size,
                                  void **con_cls)
{
    tt_metrics_http *h = cls;
    static char not_found[] = "not found: the metrics are at /metrics\n";
    static char not_allowed[] = "only GET and HEAD\n";
    if (strcmp(method, MHD_HTTP_METHOD_GET) && strcmp(method, MHD_HTTP_METHOD_HEAD))
        return answer(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "text/plain", not_allowed, sizeof not_allowed - 1, false);
    if (strcmp(url, "/metrics"))
        return answer(conn, MHD_HTTP_NOT_FOUND, "text/plain", not_found, sizeof not_found - 1, false);
    tt_mreg_format f = tt_mreg_negotiate(mhd.lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT));
    size_t len = 0;
    char *page = tt_mreg_render(h->reg, f, &len);
    if (!page) return MHD_NO;
    atomic_fetch_add(&h->scrapes, 1);
    return answer(conn, MHD_HTTP_OK, tt_mreg_content_type(f), page, len, true);
}

/* "HOST:PORT", "[V6]:PORT" or "PORT" into a socket address. */
static bool parse_listen(const char *listen, struct sockaddr_storage *ss, socklen_t *sslen)
{
    char host[128] = "127.0.0.1";
    const char *colon = strrchr(listen, ':');
    const char *port_s = colon ? colon + 1 : listen;
    if (colon) {
        size_t n = (size_t)(colon - listen);
        if (n >= sizeof host) return false;
        memcpy(host, listen, n);
        host[n] = 0;
        if (n >= 2 && host[0] == '[' && host[n - 1] == ']') {
            memmove(host, host + 1, n - 2);
            host[n - 2] = 0;
        }
        if (!host[0]) snprintf(host, sizeof host, "127.0.0.1");
    }
    uint32_t port;
    if (!tt_parse_u32(port_s, 65535, &port)) return false;
    memset(ss, 0, sizeof *ss);
    struct sockaddr_in *v4 = (struct sockaddr_in *)ss;
    struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)ss;
    if (inet_pton(AF_INET, host, &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET;
        v4->sin_port = htons((uint16_t)port);
        *sslen = sizeof *v4;
        return true;
    }
    if (inet_pton(AF_INET6, host, &v6->sin6_addr) == 1) {
        v6->sin6_family = AF_INET6;
        v6->sin6_port = htons((uint16_t)port);
        *sslen = sizeof *v6;
        return true;
    }
    return false;
}

tt_metrics_http *tt_metrics_http_start(tt_mreg *m, const char *listen, char *err, size_t errlen)
{
    struct sockaddr_storage ss;
    socklen_t sslen = 0;
    if (!parse_listen(listen, &ss, &sslen)) {
        snprintf(err, errlen, "--metrics wants HOST:PORT or PORT (a numeric address), got '%s'", listen);
        return NULL;
    }
    if (tt_lazy_load(&mhd_lib, err, errlen) < 0) return NULL;
    tt_metrics_http *h = calloc(1, sizeof *h);
    if (!h) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    h->reg = m;
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG;
    if (ss.ss_family == AF_INET6) flags |= MHD_USE_IPv6;
    h->daemon = mhd.start_daemon(flags, 0, NULL, NULL, on_request, h, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
                                 MHD_OPTION_CONNECTION_LIMIT, (unsigned)64, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)10,
                                 MHD_OPTION_END);
    if (!h->daemon) {
        snprintf(err, errlen, "cannot serve metrics on %s (address in use, or not this host's)", listen);
        free(h);
        return NULL;
    }
    const union MHD_DaemonInfo *info = mhd.get_daemon_info(h->daemon, MHD_DAEMON_INFO_LISTEN_FD);
    struct sockaddr_storage bound;
    socklen_t blen = sizeof bound;
    if (info && getsockname(info->listen_fd, (struct sockaddr *)&bound, &blen) == 0)
        h->port = ntohs(bound.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&bound)->sin6_port
                                                    : ((struct sockaddr_in *)&bound)->sin_port);
    return h;
}

uint16_t tt_metrics_http_port(const tt_metrics_http *h) { return h->port; }

uint64_t tt_metrics_http_scrapes(const tt_metrics_http *h) { return atomic_load(&h->scrapes); }

void tt_metrics_http_stop(tt_metrics_http *h)
{
    if (!h) return;
    mhd.stop_daemon(h->daemon);
    free(h);
}
