#include "core/util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

bool tt_parse_u32(const char *s, uint32_t max, uint32_t *out)
{
    if (s[0] < '0' || s[0] > '9') return false; /* strtoul would take a sign or leading spaces */
    char *end;
    errno = 0;
    unsigned long v = strtoul(s, &end, 10);
    if (errno || *end || v > max) return false;
    *out = (uint32_t)v;
    return true;
}

bool tt_parse_seconds(const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !(v > 0) || v > 1e7) return false;
    *out = v;
    return true;
}

size_t tt_u64_decimal(uint64_t v, char out[20])
{
    static const char pairs[] = "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
                                "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
                                "8081828384858687888990919293949596979899";
    char tmp[20];
    size_t i = sizeof tmp;
    while (v >= 10000) { /* four digits a step: one 64-bit division, two small ones */
        uint32_t four = (uint32_t)(v % 10000);
        v /= 10000;
        i -= 4;
        memcpy(tmp + i, pairs + 2 * (four / 100), 2);
        memcpy(tmp + i + 2, pairs + 2 * (four % 100), 2);
    }
    uint32_t rest = (uint32_t)v; /* below 10000 */
    if (rest >= 100) {
        i -= 2;
        memcpy(tmp + i, pairs + 2 * (rest % 100), 2);
        rest /= 100;
    }
    if (rest >= 10) {
        i -= 2;
        memcpy(tmp + i, pairs + 2 * rest, 2);
    } else {
        tmp[--i] = (char)('0' + rest);
    }
    memcpy(out, tmp + i, sizeof tmp - i);
    return sizeof tmp - i;
}

uint64_t tt_clock_ns(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int tt_fail_line(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || errlen == 0) return -1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    for (char *p = err; *p; p++)
        if (*p == '\n' || *p == '\r') *p = ' ';
    return -1;
}

int tt_read_file(const char *path, size_t max, char **data, size_t *len, char *err, size_t errlen)
{
    *data = NULL;
    *len = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return tt_fail_line(err, errlen, "%s: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return tt_fail_line(err, errlen, "%s: not a regular file", path);
    }
    if ((uint64_t)st.st_size > max) {
        close(fd);
        return tt_fail_line(err, errlen, "%s: %lld bytes, more than the %zu this reads", path,
                        (long long)st.st_size, max);
    }
    size_t cap = (size_t)st.st_size + 1;
    char *buf = malloc(cap);
    if (!buf) {
        close(fd);
        return tt_fail_line(err, errlen, "%s: out of memory", path);
    }
    size_t got = 0;
    while (got < cap - 1) {
        ssize_t n = read(fd, buf + got, cap - 1 - got);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            int e = errno;
            free(buf);
            close(fd);
            return tt_fail_line(err, errlen, "%s: %s", path, strerror(e));
        }
        if (n == 0) break;
        got += (size_t)n;
    }
    close(fd);
    buf[got] = '\0';
    *data = buf;
    *len = got;
    return 0;
}

#if defined(__SANITIZE_ADDRESS__)
/* The sanitizer runtime's own count (declared here: gcc ships no header for it). */
size_t __sanitizer_get_current_allocated_bytes(void);
size_t tt_heap_in_use(void)
{
    return __sanitizer_get_current_allocated_bytes();
}
#else
#include <malloc.h>
size_t tt_heap_in_use(void)
{
    struct mallinfo2 mi = mallinfo2();
    return mi.uordblks + mi.hblkhd;
}
#endif

bool tt_env_flag(const char *name)
{
    const char *v = getenv(name);
    return v && *v && strcmp(v, "0") != 0;
}

int tt_grow(void *array_p, size_t *cap, size_t need, size_t elem, size_t min_cap)
{
    if (need <= *cap) return 0;
    size_t c = *cap ? *cap : (min_cap ? min_cap : 1);
    while (c < need) {
        if (c > SIZE_MAX / 2) return -1;
        c *= 2;
    }
    if (elem && c > SIZE_MAX / elem) return -1;
    void *p;
    memcpy(&p, array_p, sizeof p);
    void *np = realloc(p, c * elem);
    if (!np) return -1;
    memcpy(array_p, &np, sizeof np);
    *cap = c;
    return 0;
}
