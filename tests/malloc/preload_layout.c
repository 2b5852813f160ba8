/*
 * tests/malloc/preload_layout.c - run with libdmm.so preloaded (ctest
 * malloc_preload_layout): libdmm.so's initialised writable data (the
 * writable segment's part in the file, mapped privately: the pages read
 * are resident in every process) is at most 8 KiB.  The empty heap the
 * fast paths start from (15 KiB, mostly zeros) was in .data; it is in
 * .bss.  The code every process runs is at the start of the text, in the
 * first two 64 KiB-aligned windows of the executable segment, where .init
 * and the PLT are (the functions checked: the malloc family, the port's
 * calls at load, the medium heaps' init and entry points; they were at the
 * end of the 1.4 MiB text, two windows apart from .init), and the library
 * has no DT_FINI (the C runtime's empty _fini, after the whole text, was
 * called at exit and faulted in the text's last window).  Only malloc.c's
 * and the preload files' functions have unwind tables, not the heap's: the
 * unwind table index (PT_GNU_EH_FRAME, 8 bytes a function) is at most 3
 * KiB (4.6 KiB, 584 functions, with the heap's; 0.8 KiB release, 1.7 KiB
 * debug without).  The tables sit in the read-only segment after the text,
 * whose constants are read at start-up, so fault-around makes the whole
 * segment resident in every process (56 KiB with the heap's tables, 17
 * KiB without, release build).  Also prints the
 * library's resident page count (not asserted: the kernel's fault-around
 * size decides it; docs/malloc.md, "The library's own pages").  Exit 0
 * when the checks hold, else 1.
 * The functions a small program runs, static ones included (read from the
 * file's symbol table), lie whole in the executable segment's first 64 KiB,
 * which its first fault (.init) maps: src/malloc/libdmm_hot.ld.  Before
 * that script, the medium heap's TLSF paths (e_malloc, e_realloc) were
 * past it and a program's text took a second 64 KiB.
 * The library exports exactly the names the build's libdmm.map lists
 * (written from src/malloc/libdmm.map.in; its path in DMM_TEST_EXPORT_MAP):
 * before the map, ~150 internal heap, port and core names were exported
 * too, and the dynamic symbol, string and hash tables every process maps
 * were ~9 KiB larger.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *dmm_path;
static int found, loads, has_fini;
static size_t rw_file_bytes, ro_after_text_bytes, eh_index_bytes;
static uintptr_t text_lo, text_hi; /* the executable segment, run-time addresses */
static uintptr_t dmm_base;         /* the library's load bias */

static int phdr_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    (void)arg;
    if (!info->dlpi_name || strcmp(info->dlpi_name, dmm_path) != 0)
        return 0;
    found = 1;
    dmm_base = (uintptr_t)info->dlpi_addr;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_GNU_EH_FRAME)
            eh_index_bytes += ph->p_memsz;
        if (ph->p_type != PT_LOAD)
            continue;
        loads++;
        if (ph->p_flags & PF_W)
            rw_file_bytes += ph->p_filesz;
        else if (!(ph->p_flags & PF_X) && text_lo) /* read-only, after the executable one */
            ro_after_text_bytes += ph->p_memsz;
        if (ph->p_flags & PF_X) {
            text_lo = (uintptr_t)info->dlpi_addr + (uintptr_t)ph->p_vaddr;
            text_hi = text_lo + (uintptr_t)ph->p_memsz;
        }
    }
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_DYNAMIC)
            continue;
        for (const ElfW(Dyn) *d = (const ElfW(Dyn) *)(info->dlpi_addr + ph->p_vaddr); d->d_tag != DT_NULL; d++)
            if (d->d_tag == DT_FINI)
                has_fini = 1;
    }
    return 1;
}

/* Resident pages of the mappings of path (/proc/self/maps, pagemap). */
static long resident_pages(const char *path)
{
    FILE *m = fopen("/proc/self/maps", "r");
    int pm = open("/proc/self/pagemap", O_RDONLY);
    long n = 0, os = sysconf(_SC_PAGESIZE);
    char line[4096];
    if (!m || pm < 0) {
        if (m)
            fclose(m);
        if (pm >= 0)
            close(pm);
        return -1;
    }
    while (fgets(line, sizeof line, m)) {
        unsigned long lo, hi;
        char *name = strchr(line, '/');
        if (sscanf(line, "%lx-%lx", &lo, &hi) != 2 || !name)
            continue;
        name[strcspn(name, "\n")] = '\0';
        if (strcmp(name, path) != 0)
            continue;
        for (unsigned long a = lo; a < hi; a += (unsigned long)os) {
            uint64_t v = 0;
            if (pread(pm, &v, sizeof v, (off_t)(a / (unsigned long)os * sizeof v)) == (ssize_t)sizeof v && (v >> 63))
                n++;
        }
    }
    fclose(m);
    close(pm);
    return n;
}

/* The functions a small program runs (callgrind: mimalloc-bench's
 * glibc-simple, cfrac, espresso, cache-scratch), static ones included, so
 * read from the file's symbol table: a name or its GCC clones (name.part.N
 * ...); for a name several objects define (the heap variants' e_*), one
 * definition must be there (the TLSF variant's, which the medium heaps
 * run). */
static const char *const hot_text[] = {
    "malloc", "free", "calloc", "realloc", "alloc_general", "malloc_or_slow", "free_general", "free_slow",
    "page_extend", "page_retire", "global_init", "heap_bind", "heap_abandon", "heap_tidy_keep", "medium_free",
    "mrelease", "_Znwm", "_ZdlPv", "memcpy", "checked_memcpy", "find_libc", "dmm_port_pages_map_aligned",
    "dmm_port_getenv", "dmm_port_atfork",
    "dmm_port_random", "dmm_heap_config_check", "dmm_heap_init", "dmm_heap_malloc", "dmm_heap_free",
    "dmm_heap_realloc", "e_malloc", "e_free", "e_free_full", "e_free_merge", "e_realloc"};

/* The whole file at path, malloc'd (NULL when it cannot be read). */
static unsigned char *read_whole(const char *path)
{
    int fd = open(path, O_RDONLY);
    off_t len = fd >= 0 ? lseek(fd, 0, SEEK_END) : -1;
    unsigned char *f = len > 0 ? malloc((size_t)len) : NULL;
    if (f && pread(fd, f, (size_t)len, 0) != (ssize_t)len) {
        free(f);
        f = NULL;
    }
    if (fd >= 0)
        close(fd);
    return f;
}

/* The first section of the given type in the ELF image f (NULL: none). */
static const ElfW(Shdr) *section_of(const unsigned char *f, unsigned type)
{
    const ElfW(Ehdr) *eh = (const ElfW(Ehdr) *)f;
    const ElfW(Shdr) *sh = (const ElfW(Shdr) *)(f + eh->e_shoff);
    for (int i = 0; i < eh->e_shnum; i++)
        if (sh[i].sh_type == type)
            return &sh[i];
    return NULL;
}

/* 0 when every hot_text function lies whole in [lo, hi) (e_realloc: its
 * entry; link-time addresses), else 1 with a line for each that does not;
 * -1: the file has no symbol table (stripped), not checked. */
static int check_hot_text(const char *path, uintptr_t lo, uintptr_t hi)
{
    enum { N = sizeof hot_text / sizeof hot_text[0] };
    int in[N] = {0}, seen[N] = {0}, bad = 0;
    unsigned char *f = read_whole(path);
    if (!f)
        return -1;
    const ElfW(Shdr) *sh = (const ElfW(Shdr) *)(f + ((const ElfW(Ehdr) *)f)->e_shoff), *tab = section_of(f, SHT_SYMTAB);
    int found_tab = tab != NULL;
    if (tab) {
        const ElfW(Sym) *sym = (const ElfW(Sym) *)(f + tab->sh_offset);
        const char *str = (const char *)(f + sh[tab->sh_link].sh_offset);
        size_t n = tab->sh_size / sizeof *sym;
        for (size_t k = 0; k < n; k++) {
            if ((sym[k].st_info & 0xfu) != STT_FUNC || !sym[k].st_value)
                continue;
            const char *name = str + sym[k].st_name;
            for (int j = 0; j < N; j++) {
                size_t l = strlen(hot_text[j]);
                if (strncmp(name, hot_text[j], l) != 0 || (name[l] != '\0' && name[l] != '.'))
                    continue;
                seen[j] = 1;
                /* e_realloc (21 KB, last in the script) by its entry:
                 * the rest of the list must not be crowded out by it */
                if (sym[k].st_value >= lo &&
                    (strcmp(hot_text[j], "e_realloc") == 0 ? sym[k].st_value : sym[k].st_value + sym[k].st_size) < hi)
                    in[j] = 1;
            }
        }
    }
    free(f);
    if (!found_tab)
        return -1;
    for (int j = 0; j < N; j++)
        if (!seen[j] && hot_text[j][0] == '_') /* C++'s operators: 64-bit Linux only (preload_cxx.c) */
            continue;
        else if (!seen[j] || !in[j]) {
            fprintf(stderr, "preload_layout: %s %s\n", hot_text[j],
                    seen[j] ? "is not in the first 64 KiB of the executable segment" : "is not in the symbol table");
            bad = 1;
        }
    return bad;
}

/* Reads the names between "global:" and "local:" of the version script
 * at path (comments skipped) into names; returns their count, -1 when the
 * file cannot be read. */
static int read_map(const char *path, char names[][64], int max)
{
    FILE *f = fopen(path, "r");
    char buf[8192];
    size_t len;
    int n = 0;
    if (!f)
        return -1;
    len = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[len] = '\0';
    for (char *c = strstr(buf, "/*"); c; c = strstr(c, "/*")) { /* blank the comments */
        char *e = strstr(c + 2, "*/");
        size_t l = e ? (size_t)(e + 2 - c) : strlen(c);
        memset(c, ' ', l);
        c += l;
    }
    char *g = strstr(buf, "global:"), *l = strstr(buf, "local:");
    if (!g || !l || l < g)
        return -1;
    *l = '\0';
    for (char *t = strtok(g + 7, " \t\n;"); t && n < max; t = strtok(NULL, " \t\n;"))
        snprintf(names[n++], 64, "%s", t);
    return n;
}

/* 0 when the names path's dynamic symbol table defines are exactly the
 * map's, else 1 with a line for each difference; -1: the map or the table
 * cannot be read. */
static int check_exports(const char *path, const char *map)
{
    static char names[128][64];
    int n = map ? read_map(map, names, 128) : -1, bad = 0, extra = 0;
    unsigned char used[128] = {0};
    unsigned char *f = n > 0 ? read_whole(path) : NULL;
    if (!f)
        return -1;
    const ElfW(Shdr) *sh = (const ElfW(Shdr) *)(f + ((const ElfW(Ehdr) *)f)->e_shoff), *dyn = section_of(f, SHT_DYNSYM);
    int tab = dyn != NULL;
    if (dyn) {
        const ElfW(Sym) *sym = (const ElfW(Sym) *)(f + dyn->sh_offset);
        const char *str = (const char *)(f + sh[dyn->sh_link].sh_offset);
        for (size_t k = 1; k < dyn->sh_size / sizeof *sym; k++) {
            unsigned bind = (unsigned)sym[k].st_info >> 4; /* ELF32_ST_BIND and ELF64_ST_BIND alike */
            if (sym[k].st_shndx == SHN_UNDEF || (bind != STB_GLOBAL && bind != STB_WEAK))
                continue;
            const char *name = str + sym[k].st_name;
            int j = 0;
            while (j < n && strcmp(names[j], name) != 0)
                j++;
            if (j == n) {
                if (extra++ < 8)
                    fprintf(stderr, "preload_layout: %s exports %s, which libdmm.map does not list\n", path, name);
                bad = 1;
            } else {
                used[j] = 1;
            }
        }
    }
    free(f);
    if (!tab)
        return -1;
    if (extra > 8)
        fprintf(stderr, "preload_layout: ... %d names exported that libdmm.map does not list\n", extra);
    for (int j = 0; j < n; j++)
        if (!used[j]) {
            fprintf(stderr, "preload_layout: %s does not export %s (libdmm.map lists it)\n", path, names[j]);
            bad = 1;
        }
    return bad;
}

int main(void)
{
    Dl_info di;
    void *sym = dlsym(RTLD_DEFAULT, "dmm_malloc");
    char real[4096];
    if (!sym || !dladdr(sym, &di) || !di.dli_fname) {
        fprintf(stderr, "preload_layout: libdmm.so is not loaded (run it with LD_PRELOAD)\n");
        return 1;
    }
    dmm_path = di.dli_fname;
    dl_iterate_phdr(phdr_cb, NULL);
    if (!found || !loads) {
        fprintf(stderr, "preload_layout: no program headers for %s\n", dmm_path);
        return 1;
    }
    if (!realpath(dmm_path, real))
        snprintf(real, sizeof real, "%s", dmm_path);
    printf("preload_layout: %s: %d loadable segments, %zu bytes of initialised writable data, %zu bytes read-only "
           "after the text, %zu bytes of unwind table index, %ld pages resident\n",
           real, loads, rw_file_bytes, ro_after_text_bytes, eh_index_bytes, resident_pages(real));
    int bad = 0;
    if (rw_file_bytes > 8192u) {
        fprintf(stderr, "preload_layout: %zu bytes of initialised writable data (at most 8192)\n", rw_file_bytes);
        bad = 1;
    }
    if (eh_index_bytes > 3072u) {
        fprintf(stderr, "preload_layout: %zu bytes of unwind table index (at most 3072: the heap's objects have tables)\n",
                eh_index_bytes);
        bad = 1;
    }
    /* the first two 64 KiB windows the executable segment meets */
    uintptr_t hot_end = (text_lo & ~(uintptr_t)0xffff) + 0x20000u;
    static const char *const hot[] = {"malloc", "free", "calloc", "realloc", "posix_memalign", "dmm_malloc",
                                      "dmm_free"};
    for (size_t i = 0; i < sizeof hot / sizeof hot[0]; i++) {
        Dl_info fi;
        void *f = dlsym(RTLD_DEFAULT, hot[i]);
        if (!f || !dladdr(f, &fi) || !fi.dli_fname || strcmp(fi.dli_fname, dmm_path) != 0) {
            fprintf(stderr, "preload_layout: %s is not libdmm.so's\n", hot[i]);
            bad = 1;
        } else if ((uintptr_t)f < text_lo || (uintptr_t)f >= hot_end) {
            fprintf(stderr, "preload_layout: %s at text offset 0x%lx, past the text's first 128 KiB windows (text 0x%lx bytes)\n",
                    hot[i], (unsigned long)((uintptr_t)f - text_lo), (unsigned long)(text_hi - text_lo));
            bad = 1;
        }
    }
    /* The first fault in the executable segment (.init, at its start)
     * maps its first 64 KiB (fault-around: a 64 KiB-aligned window, moved
     * to begin at the segment's start when it would begin before it): the
     * code every process runs must lie there (src/malloc/libdmm_hot.ld);
     * before, the medium heap's TLSF paths were 6 KiB past it. */
    if (!getenv("DMM_TEST_HOT_TEXT") || strcmp(getenv("DMM_TEST_HOT_TEXT"), "1") != 0) {
        /* the build did not use the script (a linker that refuses it) */
        printf("preload_layout: libdmm_hot.ld not used by this build, the hot text not checked\n");
    } else {
        uintptr_t lo = text_lo - dmm_base;
        int r = check_hot_text(real, lo, lo + 0x10000u);
        if (r < 0)
            printf("preload_layout: %s has no symbol table, the hot text not checked\n", real);
        else if (r > 0)
            bad = 1;
    }
    {
        int r = check_exports(real, getenv("DMM_TEST_EXPORT_MAP"));
        if (r < 0)
            fprintf(stderr, "preload_layout: cannot read the export map (DMM_TEST_EXPORT_MAP=%s) or %s's dynamic "
                    "symbol table\n", getenv("DMM_TEST_EXPORT_MAP") ? getenv("DMM_TEST_EXPORT_MAP") : "(unset)", real);
        if (r != 0)
            bad = 1;
    }
    if (has_fini) {
        fprintf(stderr, "preload_layout: libdmm.so has a DT_FINI (the C runtime's _fini, after the whole text)\n");
        bad = 1;
    }
    return bad;
}
