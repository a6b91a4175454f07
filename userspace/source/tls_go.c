/* tls_go.c - the uprobe sites of Go's crypto/tls (tls_go.h). */
#include "source/tls_go.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef TT_WITH_BPF
#include <capstone/capstone.h>
#include <gelf.h>
#include <unistd.h>

#include "core/lazy_lib.h"
#include "core/util.h"
#endif

static const char go_buildinfo_magic[14] = "\xff Go buildinf:";

/* An unsigned LEB128 varint at *p (below end): its value, *p moved past
 * it; false when it runs off the end or past 32 bits. */
static bool read_uvarint(const uint8_t **p, const uint8_t *end, uint32_t *out)
{
    uint32_t v = 0;
    for (int shift = 0; shift < 35 && *p < end; shift += 7) {
        uint8_t b = *(*p)++;
        v |= (uint32_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *out = v;
            return true;
        }
    }
    return false;
}

bool tt_tls_go_buildinfo_version(const uint8_t *sec, size_t len, char *version, size_t cap)
{
    /* magic (14), pointer size, flags (bit 1: strings inline), padding to 32,
     * then the version as a varint-prefixed string */
    if (len < 33 || memcmp(sec, go_buildinfo_magic, sizeof go_buildinfo_magic) || !(sec[15] & 2)) return false;
    const uint8_t *p = sec + 32, *end = sec + len;
    uint32_t n = 0;
    if (!read_uvarint(&p, end, &n) || n == 0 || n > (size_t)(end - p) || n >= cap) return false;
    for (uint32_t i = 0; i < n; i++)
        if (p[i] < 0x21 || p[i] > 0x7e) return false;
    memcpy(version, p, n);
    version[n] = 0;
    return strncmp(version, "go", 2) == 0;
}

#ifdef TT_WITH_BPF

/* The minor version of "go1.MINOR...", 99 for any other form (a
 * development build, "devel go1.22-...", is taken as new). */
static int go_minor(const char *version)
{
    if (strncmp(version, "go1.", 4)) return 99;
    return atoi(version + 4);
}

/* libcapstone, loaded the first time a Go binary's code is read
 * (core/lazy_lib.h): the SONAME of the headers' major version first. */
static struct {
    __typeof__(cs_open) *open;
    __typeof__(cs_malloc) *malloc;
    __typeof__(cs_disasm_iter) *disasm_iter;
    __typeof__(cs_free) *free;
    __typeof__(cs_close) *close;
} capstone;
static const char *const capstone_names[] = {"libcapstone.so." TT_STR(CS_API_MAJOR), "libcapstone.so", NULL};
static const tt_lazy_sym capstone_syms[] = {
    {"cs_open", (void **)&capstone.open},     {"cs_malloc", (void **)&capstone.malloc},
    {"cs_disasm_iter", (void **)&capstone.disasm_iter}, {"cs_free", (void **)&capstone.free},
    {"cs_close", (void **)&capstone.close},
};
static tt_lazy_lib capstone_lib = {capstone_names, "Go TLS uprobes", capstone_syms,
                                   sizeof capstone_syms / sizeof capstone_syms[0], 0, ""};

int tt_tls_go_code_probes(const uint8_t *code, size_t len, uint64_t at, uint64_t *entry, uint64_t *returns,
                          size_t cap)
{
    if (tt_lazy_load(&capstone_lib, NULL, 0) < 0) return -1;
    csh h;
    if (capstone.open(CS_ARCH_X86, CS_MODE_64, &h) != CS_ERR_OK) return -1;
    cs_insn *insn = capstone.malloc(h);
    if (!insn) {
        capstone.close(&h);
        return -1;
    }
    *entry = 0;
    const uint8_t *p = code;
    size_t left = len;
    uint64_t addr = at;
    int n = 0, index = 0;
    bool stack_compare = false;
    while (left && capstone.disasm_iter(h, &p, &left, &addr, insn)) {
        /* the stack check opens the function: cmp REG, [r14 + 0x10]; jbe MORESTACK
         * (a larger frame computes REG with a lea first) */
        if (index < 3 && insn->id == X86_INS_CMP && strstr(insn->op_str, "[r14 + 0x10]")) stack_compare = true;
        else if (stack_compare && insn->id == X86_INS_JBE && !*entry) *entry = insn->address;
        else stack_compare = false;
        if (insn->id == X86_INS_RET) {
            if ((size_t)n < cap) returns[n] = insn->address;
            n++;
        }
        index++;
    }
    capstone.free(insn, 1);
    capstone.close(&h);
    return left ? -1 : n;
}

/* The file offset of vaddr, through the executable loaded segment holding
 * it; 0 when none does. */
static uint64_t file_offset(Elf *e, uint64_t vaddr)
{
    size_t nph = 0;
    if (elf_getphdrnum(e, &nph) != 0) return 0;
    for (size_t i = 0; i < nph; i++) {
        GElf_Phdr ph;
        if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_LOAD || !(ph.p_flags & PF_X)) continue;
        if (vaddr >= ph.p_vaddr && vaddr < ph.p_vaddr + ph.p_filesz) return vaddr - ph.p_vaddr + ph.p_offset;
    }
    return 0;
}

/* One function's probe sites: the jump of its stack check and, with
 * returns, its return instructions. Returns false with a note when its
 * code cannot be read or decoded, or has no stack check. */
static bool function_probes(int fd, uint64_t off, uint64_t size, uint64_t *entry, uint64_t *returns, size_t *n_returns,
                            const char *name, char *note, size_t cap)
{
    char why[160];
    if (tt_lazy_load(&capstone_lib, why, sizeof why) < 0) {
        snprintf(note, cap, "Go's %s not decoded: %s", name, why);
        return false;
    }
    uint8_t *code = off && size && size < (1u << 20) ? malloc(size) : NULL;
    if (!code || pread(fd, code, size, (off_t)off) != (ssize_t)size) {
        free(code);
        snprintf(note, cap, "Go's %s not readable", name);
        return false;
    }
    uint64_t scratch[TT_TLS_GO_MAX_RETURNS];
    int n = tt_tls_go_code_probes(code, size, off, entry, returns ? returns : scratch, TT_TLS_GO_MAX_RETURNS);
    free(code);
    if (n < 0) {
        snprintf(note, cap, "Go's %s does not decode as amd64 code", name);
        return false;
    }
    if (!*entry) {
        snprintf(note, cap, "Go's %s does not open with a stack check", name);
        return false;
    }
    if (returns && (n == 0 || n > TT_TLS_GO_MAX_RETURNS)) {
        snprintf(note, cap, "Go's %s has %d return instructions (1 to %d are probed)", name, n, TT_TLS_GO_MAX_RETURNS);
        return false;
    }
    if (n_returns) *n_returns = (size_t)n;
    return true;
}

int tt_tls_go_find(int fd, tt_tls_go_probes *out, char *note, size_t cap)
{
    memset(out, 0, sizeof *out);
    if (elf_version(EV_CURRENT) == EV_NONE) return 0;
    Elf *e = elf_begin(fd, ELF_C_READ, NULL);
    if (!e) return 0;
    int rc = 0;
    size_t shstrndx = 0;
    GElf_Ehdr eh;
    if (!gelf_getehdr(e, &eh) || elf_getshdrstrndx(e, &shstrndx) != 0) goto out;
    Elf_Scn *buildinfo = NULL, *symtab = NULL;
    for (Elf_Scn *scn = NULL; (scn = elf_nextscn(e, scn));) {
        GElf_Shdr sh;
        if (!gelf_getshdr(scn, &sh)) continue;
        const char *name = elf_strptr(e, shstrndx, sh.sh_name);
        if (name && !strcmp(name, ".go.buildinfo")) buildinfo = scn;
        if (sh.sh_type == SHT_SYMTAB) symtab = scn;
    }
    if (!buildinfo) goto out; /* not a Go program */
    rc = -1;
    Elf_Data *bd = elf_getdata(buildinfo, NULL);
    if (!bd || !bd->d_buf || !tt_tls_go_buildinfo_version(bd->d_buf, bd->d_size, out->version, sizeof out->version)) {
        snprintf(note, cap, "a Go program built before Go 1.18 (its version is not inline): not read");
        goto out;
    }
    if (eh.e_machine != EM_X86_64) {
        snprintf(note, cap, "a %s program not for amd64: Go's register ABI is read on amd64 only", out->version);
        goto out;
    }
    if (go_minor(out->version) < 17) {
        snprintf(note, cap, "a %s program: Go before 1.17 passes arguments on the stack, not read", out->version);
        goto out;
    }
    if (!symtab) {
        snprintf(note, cap, "a %s program without its symbol table (stripped): crypto/tls not found", out->version);
        goto out;
    }
    GElf_Shdr sh;
    Elf_Data *d = elf_getdata(symtab, NULL);
    uint64_t write_addr = 0, write_size = 0, read_addr = 0, read_size = 0;
    gelf_getshdr(symtab, &sh);
    for (size_t i = 0; d && sh.sh_entsize && i < sh.sh_size / sh.sh_entsize; i++) {
        GElf_Sym sym;
        if (!gelf_getsym(d, (int)i, &sym) || GELF_ST_TYPE(sym.st_info) != STT_FUNC || !sym.st_value) continue;
        const char *name = elf_strptr(e, sh.sh_link, sym.st_name);
        if (!name || strncmp(name, "crypto/tls.(*Conn).", 19)) continue;
        if (!strcmp(name + 19, "Write")) write_addr = sym.st_value, write_size = sym.st_size;
        if (!strcmp(name + 19, "Read")) read_addr = sym.st_value, read_size = sym.st_size;
    }
    if (!write_addr || !read_addr) {
        rc = 0; /* a Go program without crypto/tls */
        goto out;
    }
    if (!function_probes(fd, file_offset(e, write_addr), write_size, &out->write_at, NULL, NULL,
                         "(*tls.Conn).Write", note, cap) ||
        !function_probes(fd, file_offset(e, read_addr), read_size, &out->read_at, out->read_returns,
                         &out->n_read_returns, "(*tls.Conn).Read", note, cap))
        goto out;
    rc = 1;
out:
    elf_end(e);
    return rc;
}

#else

int tt_tls_go_code_probes(const uint8_t *code, size_t len, uint64_t at, uint64_t *entry, uint64_t *returns,
                          size_t cap)
{
    return -1;
}

int tt_tls_go_find(int fd, tt_tls_go_probes *out, char *note, size_t cap)
{
    memset(out, 0, sizeof *out);
    return 0;
}

#endif
