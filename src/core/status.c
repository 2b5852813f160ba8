/* src/core/status.c - names of the shared status codes. */
#include "dmm/common.h"

const char *dmm_status_str(dmm_status s)
{
    switch (s) {
    case DMM_OK: return "ok";
    case DMM_E_NULL: return "a required pointer argument is NULL";
    case DMM_E_TOO_SMALL: return "buffer too small";
    case DMM_E_CONFIG: return "invalid configuration";
    case DMM_E_UNSUPPORTED: return "not supported by this port";
    case DMM_E_CORRUPT: return "heap corrupted";
    case DMM_E_RANGE: return "argument out of range";
    case DMM_E_OVERLAP: return "region overlaps an existing region";
    }
    return "unknown status";
}
