/*
 * tools/common/schemas.h - the name and version of every JSON document the
 * native tools write, in one place.  A reader (python/dmmkit/schemas.py)
 * checks the "schema" member against the same strings; change a version
 * here and there together when a document changes incompatibly (adding a
 * member is compatible).
 */
#ifndef DMM_TOOLS_SCHEMAS_H
#define DMM_TOOLS_SCHEMAS_H

#define DMM_SCHEMA_REPLAY "dmm-replay/1"     /* dmm-replay --json */
#define DMM_SCHEMA_ANALYSE "dmm-analyse/1"   /* dmm-analyse --json */
#define DMM_SCHEMA_HEAPMAP "dmm-heapmap/1"   /* dmm-replay --heapmap */
#define DMM_SCHEMA_TIMELINE "dmm-timeline/1" /* dmm-replay --timeline */

#endif
