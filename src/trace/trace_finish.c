/*
 * src/trace/trace_finish.c - finishing a trace that was built elsewhere (by
 * the recorder, or by any program that collects operations itself):
 * renumbering objects and threads densely, and saving it so that a failed
 * write leaves nothing behind.  Public API in include/dmm/trace.h.
 *
 * Hosted: the save uses POSIX open/rename/unlink/getpid.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dmm/trace.h"
#include "idmap.h"

/* ---- dense renumbering ------------------------------------------------ */

static int is_alloc(uint8_t kind)
{
    return kind == DMM_T_MALLOC || kind == DMM_T_CALLOC || kind == DMM_T_ALIGNED;
}

int dmm_trace_compact(dmm_trace *t, uint64_t *dropped)
{
    dmm_idmap ids, tids;
    uint64_t next_id = 0, next_tid = 0, drop = 0;
    size_t k = 0;
    if (dropped)
        *dropped = 0;
    if (dmm_idmap_init(&ids, 1024)) {
        errno = ENOMEM;
        return -1;
    }
    if (dmm_idmap_init(&tids, 64)) {
        dmm_idmap_free(&ids);
        errno = ENOMEM;
        return -1;
    }
    for (size_t i = 0; i < t->n; i++) {
        dmm_trace_op o = t->ops[i];
        uint64_t nid = 0, ntid;
        if (o.kind == DMM_T_SYNC)
            continue; /* re-derived by dmm_trace_add_syncs, never counted */
        if (is_alloc(o.kind)) {
            /* an allocation always starts a new object, even on a live id */
            nid = next_id + 1;
        } else if ((o.kind != DMM_T_REALLOC && o.kind != DMM_T_FREE) || dmm_idmap_get(&ids, o.id, &nid) != 0) {
            drop++; /* unknown kind, or an object whose allocation is not in the trace */
            continue;
        }
        if (dmm_idmap_get(&tids, o.tid, &ntid) != 0) {
            if (next_tid >= DMM_TRACE_MAX_THREADS) {
                drop++;
                continue;
            }
            ntid = next_tid++;
            if (dmm_idmap_put(&tids, o.tid, ntid))
                goto oom;
        }
        if (is_alloc(o.kind)) {
            if (dmm_idmap_put(&ids, o.id, nid))
                goto oom;
            next_id = nid;
        } else if (o.kind == DMM_T_FREE || o.size == 0) {
            dmm_idmap_del(&ids, o.id); /* the object ends (realloc to 0 frees) */
        }
        o.id = nid;
        o.tid = (uint32_t)ntid;
        t->ops[k++] = o;
    }
    dmm_idmap_free(&ids);
    dmm_idmap_free(&tids);
    t->n = k;
    t->threads = (uint32_t)next_tid;
    if (dropped)
        *dropped = drop;
    return 0;
oom:
    dmm_idmap_free(&ids);
    dmm_idmap_free(&tids);
    errno = ENOMEM;
    return -1;
}

/* ---- saving through a temporary file ---------------------------------- */

static int ends_with_txt(const char *path)
{
    size_t n = strlen(path);
    return n > 4 && strcmp(path + n - 4, ".txt") == 0;
}

/* Creates a fresh temporary file beside path: PATH.tmp.<pid>.<k>.  Returns the
 * descriptor, or -1 with errno. */
static int open_temp(const char *path, char *tmp, size_t cap)
{
    static _Atomic unsigned counter;
    for (int tries = 0; tries < 100; tries++) {
        int fd;
        snprintf(tmp, cap, "%s.tmp.%ld.%u", path, (long)getpid(), atomic_fetch_add(&counter, 1u));
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd >= 0 || errno != EEXIST)
            return fd;
    }
    return -1; /* errno is EEXIST */
}

int dmm_trace_save(const dmm_trace *t, const char *path)
{
    size_t cap = strlen(path) + 64;
    char *tmp = malloc(cap);
    FILE *f;
    int fd, err = 0;
    if (!tmp) {
        errno = ENOMEM;
        return -1;
    }
    {
        /* /dev/null, a FIFO: written in place, never replaced by a renamed
         * temporary file */
        struct stat st;
        if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
            tmp[0] = 0;
            fd = open(path, O_WRONLY | O_CLOEXEC);
        } else
            fd = open_temp(path, tmp, cap);
    }
    if (fd < 0) {
        err = errno;
        free(tmp);
        errno = err;
        return -1;
    }
    if (!(f = fdopen(fd, "wb"))) {
        err = errno;
        close(fd);
        if (tmp[0])
            unlink(tmp);
        free(tmp);
        errno = err;
        return -1;
    }
    /* The first failing call's errno is the cause (ENOSPC, EFBIG, EIO...);
     * keep it before fclose and unlink can change errno. */
    errno = 0;
    if ((ends_with_txt(path) ? dmm_trace_write_text(t, f) : dmm_trace_write_binary(t, f)) != 0 ||
        fflush(f) != 0 || ferror(f))
        err = errno ? errno : EIO;
    if (fclose(f) != 0 && !err)
        err = errno ? errno : EIO;
    if (!err && tmp[0] && rename(tmp, path) != 0)
        err = errno;
    if (err && tmp[0])
        unlink(tmp);
    free(tmp);
    if (err) {
        errno = err;
        return -1;
    }
    return 0;
}
