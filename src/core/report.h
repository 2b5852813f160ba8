/*
 * src/core/report.h - how every component reports a detected misuse or
 * corruption: the caller's error callback (if any) gets a dmm_error, then
 * the DMM_ON_ERROR_ABORT policy stops the program through the port layer.
 * Each component counts and records the error its own way before calling.
 */
#ifndef DMM_CORE_REPORT_H
#define DMM_CORE_REPORT_H

#include "dmm/common.h"

void dmm__report_error(dmm_error_fn fn, void *ctx, dmm_error_policy on_error, dmm_error_kind kind, dmm_op op,
                       const void *ptr, const char *msg);

#endif
