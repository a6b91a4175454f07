/* lazy_lib.h - a shared library loaded the first time a feature needs it.
 *
 * Every library linked into tokentap is mapped and relocated at each start,
 * whatever the command. libmicrohttpd (with GnuTLS and its eight
 * dependencies), libcapstone and OpenSSL serve one feature each (`watch
 * --metrics`, Go TLS uprobes, `serve --tls`), and linked they took
 * `tokentap --version` from about 10 to 25 ms on the bench machine. Those
 * features load theirs here instead, so `analyze` and the rest start
 * without them, and a machine without such a library still runs every
 * other command. */
#ifndef TT_LAZY_LIB_H
#define TT_LAZY_LIB_H

#include <stddef.h>

/* A symbol to resolve and where to store its address. */
typedef struct tt_lazy_sym {
    const char *name;
    void **slot;
} tt_lazy_sym;

/* A library and the symbols one feature uses of it. Define it static, with
 * the names to try (the SONAME the headers belong to first, NULL-ended). */
typedef struct tt_lazy_lib {
    const char *const *names;
    const char *needed_for; /* "Go TLS uprobes": said when it does not load */
    const tt_lazy_sym *syms;
    size_t n_syms;
    int state; /* 0 not tried, 1 loaded, -1 failed (and stays so) */
    char why[160];
} tt_lazy_lib;

/* Load lib (once; later calls return the first call's result) and fill
 * every slot. 0, or -1 with a one-line reason in err: the loader's message
 * and what needs the library ("libcapstone.so.4: cannot open shared object
 * file: No such file or directory (needed for Go TLS uprobes)"), every
 * slot left NULL. Thread-safe. */
int tt_lazy_load(tt_lazy_lib *lib, char *err, size_t errlen);

#endif
