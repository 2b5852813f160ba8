/* src/core/report.c - the shared misuse report (src/core/report.h). */
#include "report.h"

#include "../port/port.h"

void dmm__report_error(dmm_error_fn fn, void *ctx, dmm_error_policy on_error, dmm_error_kind kind, dmm_op op,
                       const void *ptr, const char *msg)
{
    if (fn) {
        dmm_error e = {kind, op, ptr, msg};
        fn(ctx, &e);
    }
    if (on_error == DMM_ON_ERROR_ABORT)
        dmm_port_abort();
}
