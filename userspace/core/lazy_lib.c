/* lazy_lib.c - libraries loaded on first use (lazy_lib.h). */
#include "core/lazy_lib.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

static pthread_mutex_t lazy_lock = PTHREAD_MUTEX_INITIALIZER;

/* Open the first of lib->names that loads and resolve every symbol;
 * lib->why says why not. Called once, under lazy_lock. */
static int load(tt_lazy_lib *lib)
{
    void *handle = NULL;
    char first[112] = ""; /* the first name's failure; leaves room in lib->why for what needs the library */
    for (const char *const *name = lib->names; *name && !handle; name++) {
        handle = dlopen(*name, RTLD_NOW | RTLD_LOCAL);
        if (!handle && !first[0]) {
            const char *why = dlerror();
            snprintf(first, sizeof first, "%s", why ? why : *name);
        }
    }
    if (!handle) {
        snprintf(lib->why, sizeof lib->why, "%s (needed for %s)", first, lib->needed_for);
        return -1;
    }
    for (size_t i = 0; i < lib->n_syms; i++) {
        *lib->syms[i].slot = dlsym(handle, lib->syms[i].name);
        if (!*lib->syms[i].slot) {
            snprintf(lib->why, sizeof lib->why, "%s has no %s (not the version tokentap was built for; needed for %s)",
                     lib->names[0], lib->syms[i].name, lib->needed_for);
            for (size_t k = 0; k < lib->n_syms; k++) *lib->syms[k].slot = NULL;
            dlclose(handle);
            return -1;
        }
    }
    return 0; /* kept open for the process's life */
}

int tt_lazy_load(tt_lazy_lib *lib, char *err, size_t errlen)
{
    pthread_mutex_lock(&lazy_lock);
    if (lib->state == 0) lib->state = load(lib) == 0 ? 1 : -1;
    int state = lib->state;
    pthread_mutex_unlock(&lazy_lock);
    if (state < 0 && err && errlen) snprintf(err, errlen, "%s", lib->why);
    return state > 0 ? 0 : -1;
}
