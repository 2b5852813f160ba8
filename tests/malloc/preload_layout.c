/*
 * tests/malloc/preload_layout.c - run with libdmm.so preloaded (ctest
 * malloc_preload_layout): libdmm.so's initialised writable data (the
 * writable segment's part in the file, mapped privately: the pages read
 * are resident in every process) is at most 8 KiB.  The empty heap the
 * fast paths start from (15 KiB, mostly zeros) was in .data; it is in
 * .bss.  Also prints the library's resident page count (not asserted: the
 * kernel's fault-around size decides it; docs/malloc.md, "The library's
 * own pages").  Exit 0 when the check holds, else 1.
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
static int found, loads;
static size_t rw_file_bytes;

static int phdr_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    (void)arg;
    if (!info->dlpi_name || strcmp(info->dlpi_name, dmm_path) != 0)
        return 0;
    found = 1;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        loads++;
        if (ph->p_flags & PF_W)
            rw_file_bytes += ph->p_filesz;
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
    printf("preload_layout: %s: %d loadable segments, %zu bytes of initialised writable data, %ld pages resident\n",
           real, loads, rw_file_bytes, resident_pages(real));
    if (rw_file_bytes > 8192u) {
        fprintf(stderr, "preload_layout: %zu bytes of initialised writable data (at most 8192)\n", rw_file_bytes);
        return 1;
    }
    return 0;
}
