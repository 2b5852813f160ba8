/*
 * src/heap/lock.c - the heap's locks, misuse reports, and the level-3
 * check after every public operation.  Compiled once.
 */
#include "heap_internal.h"

#include "../core/report.h"

void dmm__heap_lock(dmm_heap *h)
{
    switch (h->cfg.lock) {
    case DMM_LOCK_NONE:
        break;
    case DMM_LOCK_SPIN:
        while (atomic_flag_test_and_set_explicit(&h->spin, memory_order_acquire))
            dmm_port_cpu_relax();
        break;
    case DMM_LOCK_MUTEX:
        dmm_port_mutex_lock(&h->mutex);
        break;
    case DMM_LOCK_USER:
        h->cfg.lock_hooks.lock(h->cfg.lock_hooks.ctx);
        break;
    }
}

void dmm__heap_unlock(dmm_heap *h)
{
    switch (h->cfg.lock) {
    case DMM_LOCK_NONE:
        break;
    case DMM_LOCK_SPIN:
        atomic_flag_clear_explicit(&h->spin, memory_order_release);
        break;
    case DMM_LOCK_MUTEX:
        dmm_port_mutex_unlock(&h->mutex);
        break;
    case DMM_LOCK_USER:
        h->cfg.lock_hooks.unlock(h->cfg.lock_hooks.ctx);
        break;
    }
}

void(dmm__heap_report)(dmm_heap *h, dmm_error_kind kind, const void *ptr, const char *msg)
{
    if (h->cfg.stats != DMM_STATS_OFF)
        h->st.error_count++;
    h->errors_seen++;
    /* a rejected pointer leaves the heap as it was; a corruption found in
     * the heap's own memory may leave it inconsistent for good */
    if (kind == DMM_ERR_FREE_LIST || kind == DMM_ERR_POISON || kind == DMM_ERR_HEADER || kind == DMM_ERR_CANARY)
        h->damaged = true;
    dmm__report_error(h->cfg.error_fn, h->cfg.error_ctx, h->cfg.on_error, kind, h->op, ptr, msg);
}

#if DMM_ASSERT_LEVEL >= 3
/* Assertion level 3: the full checker after every public operation.  A
 * misuse this call reported, or a corruption found earlier, may leave the
 * heap inconsistent on purpose (the REPORT policy carries on): only a
 * silent break stops the program. */
void dmm__heap_leave_check(dmm_heap *h)
{
    dmm_heap_check_report rep;
    if (h->damaged || h->errors_seen != h->errors_at_enter)
        return;
    if (dmm__heap_check_locked(h, &rep) != DMM_OK)
        dmm_port_assert_fail(rep.detail, "dmm_heap_check after a public operation", (int)rep.invariant);
}
#endif
