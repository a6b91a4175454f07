#include "golden.h"

#include <dirent.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static char *read_all(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap + 1);
    size_t got;
    while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            cap *= 2;
            char *nb = realloc(buf, cap + 1);
            if (!nb) { free(buf); buf = NULL; }
            buf = nb;
        }
    }
    fclose(f);
    if (!buf) return NULL;
    buf[n] = 0;
    *len = n;
    return buf;
}

static int hexval(int c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static int unescape(const char *s, size_t n, uint8_t **out, size_t *outlen, const char *path)
{
    uint8_t *o = malloc(n + 1);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c == '\n') continue;
        if (c != '\\') { o[k++] = (uint8_t)c; continue; }
        if (++i >= n) break;
        switch (s[i]) {
        case 'n': o[k++] = '\n'; break;
        case 'r': o[k++] = '\r'; break;
        case 't': o[k++] = '\t'; break;
        case '0': o[k++] = 0; break;
        case '\\': o[k++] = '\\'; break;
        case '\n': break;
        case 'x': {
            int h = i + 2 < n ? hexval(s[i + 1]) : -1, l = i + 2 < n ? hexval(s[i + 2]) : -1;
            if (h < 0 || l < 0) { fprintf(stderr, "%s: bad \\x escape\n", path); free(o); return -1; }
            o[k++] = (uint8_t)(h * 16 + l);
            i += 2;
            break;
        }
        default:
            fprintf(stderr, "%s: unknown escape \\%c\n", path, s[i]);
            free(o);
            return -1;
        }
    }
    *out = o;
    *outlen = k;
    return 0;
}

int tt_golden_load(const char *path, tt_golden *g)
{
    memset(g, 0, sizeof *g);
    size_t len;
    char *text = read_all(path, &len);
    if (!text) { fprintf(stderr, "%s: cannot read\n", path); return -1; }
    char *meta = strstr(text, "=== meta\n");
    char *in = strstr(text, "=== input\n");
    char *ex = in ? strstr(in, "=== expect\n") : NULL;
    if (!in || !ex) {
        fprintf(stderr, "%s: needs '=== input' and '=== expect' sections\n", path);
        free(text);
        return -1;
    }
    g->path = strdup(path);
    if (meta && meta < in) {
        char *m = meta + strlen("=== meta\n");
        g->meta = strndup(m, (size_t)(in - m));
    } else {
        g->meta = strdup("");
    }
    char *istart = in + strlen("=== input\n");
    if (unescape(istart, (size_t)(ex - istart), &g->input, &g->input_len, path) < 0) {
        free(text);
        tt_golden_free(g);
        return -1;
    }
    char *e = ex + strlen("=== expect\n");
    size_t elen = strlen(e);
    while (elen > 0 && e[elen - 1] == '\n') elen--;
    g->expect = malloc(elen + 2);
    memcpy(g->expect, e, elen);
    if (elen) g->expect[elen++] = '\n';
    g->expect[elen] = 0;
    free(text);
    return 0;
}

void tt_golden_free(tt_golden *g)
{
    free(g->path);
    free(g->meta);
    free(g->input);
    free(g->expect);
    memset(g, 0, sizeof *g);
}

static int cmpstr(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

char **tt_golden_list(const char *dir, size_t *n)
{
    *n = 0;
    DIR *d = opendir(dir);
    if (!d) return NULL;
    char **list = NULL;
    size_t cap = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        size_t l = strlen(de->d_name);
        if (l < 7 || strcmp(de->d_name + l - 7, ".golden") != 0) continue;
        if (*n == cap) {
            cap = cap ? cap * 2 : 16;
            list = realloc(list, cap * sizeof *list);
        }
        size_t pl = strlen(dir) + l + 2;
        list[*n] = malloc(pl);
        snprintf(list[*n], pl, "%s/%s", dir, de->d_name);
        (*n)++;
    }
    closedir(d);
    if (*n) qsort(list, *n, sizeof *list, cmpstr);
    return list;
}

void tt_golden_list_free(char **list, size_t n)
{
    for (size_t i = 0; i < n; i++) free(list[i]);
    free(list);
}

const char *tt_golden_meta(const tt_golden *g, const char *key, char *buf, size_t buflen)
{
    size_t kl = strlen(key);
    for (const char *p = g->meta; p && *p;) {
        const char *eol = strchr(p, '\n');
        size_t ll = eol ? (size_t)(eol - p) : strlen(p);
        if (ll > kl && strncmp(p, key, kl) == 0 && p[kl] == '=') {
            size_t vl = ll - kl - 1;
            if (vl >= buflen) vl = buflen - 1;
            memcpy(buf, p + kl + 1, vl);
            buf[vl] = 0;
            return buf;
        }
        p = eol ? eol + 1 : NULL;
    }
    return NULL;
}

int tt_golden_compare(const tt_golden *g, const char *actual, const char *label)
{
    if (strcmp(g->expect, actual) == 0) return 0;
    const char *a = g->expect, *b = actual;
    int line = 1;
    while (*a && *a == *b) {
        if (*a == '\n') line++;
        a++, b++;
    }
    fprintf(stderr, "%s (%s): trace differs at line %d\n--- expected\n%s--- actual\n%s---\n",
            g->path, label ? label : "whole", line, g->expect, actual);
    return -1;
}

void tt_sb_printf(tt_strbuf *b, const char *fmt, ...)
{
    va_list ap;
    for (;;) {
        size_t room = b->cap - b->len;
        va_start(ap, fmt);
        int n = vsnprintf(b->s ? b->s + b->len : NULL, b->s ? room : 0, fmt, ap);
        va_end(ap);
        if (n < 0) return;
        if (b->s && (size_t)n < room) { b->len += (size_t)n; return; }
        size_t need = b->len + (size_t)n + 1;
        size_t cap = b->cap ? b->cap : 256;
        while (cap < need) cap *= 2;
        b->s = realloc(b->s, cap);
        b->cap = cap;
        if (b->len == 0) b->s[0] = 0;
    }
}

void tt_sb_escaped(tt_strbuf *b, const char *data, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)data[i];
        switch (c) {
        case '\n': tt_sb_printf(b, "\\n"); break;
        case '\r': tt_sb_printf(b, "\\r"); break;
        case '\t': tt_sb_printf(b, "\\t"); break;
        case '\\': tt_sb_printf(b, "\\\\"); break;
        case '"': tt_sb_printf(b, "\\\""); break;
        default:
            if (c < 0x20 || c == 0x7f) tt_sb_printf(b, "\\x%02x", c);
            else tt_sb_printf(b, "%c", c);
        }
    }
}

void tt_sb_free(tt_strbuf *b)
{
    free(b->s);
    memset(b, 0, sizeof *b);
}

uint8_t *tt_guard_copy(const void *data, size_t len)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t span = (len + page - 1) / page * page + page;
    uint8_t *base = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base == MAP_FAILED) return NULL;
    mprotect(base + span - page, page, PROT_NONE);
    uint8_t *p = base + span - page - len;
    if (len) memcpy(p, data, len);
    return p;
}

void tt_guard_free(uint8_t *p, size_t len)
{
    if (!p) return;
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t span = (len + page - 1) / page * page + page;
    uint8_t *base = p + len + page - span;
    munmap(base, span);
}
