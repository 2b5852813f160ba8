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

static int phdr_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    (void)arg;
    if (!info->dlpi_name || strcmp(info->dlpi_name, dmm_path) != 0)
        return 0;
    found = 1;
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
                                      "dmm_free", "dmm_port_getenv", "dmm_port_pages_map_aligned", "dmm_port_atfork",
                                      "dmm_heap_init", "dmm_heap_malloc", "dmm_heap_free", "dmm_heap_realloc"};
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
    if (has_fini) {
        fprintf(stderr, "preload_layout: libdmm.so has a DT_FINI (the C runtime's _fini, after the whole text)\n");
        bad = 1;
    }
    return bad;
}
