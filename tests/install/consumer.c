/*
 * tests/install/consumer.c - a program outside the dmmkit tree that uses an
 * installed dmmkit (headers + library found through pkg-config or
 * find_package).  scripts/test.sh builds and runs it against a temporary
 * install prefix.  Exit status 0 means every check passed.
 */
#include <dmm/heap.h>

#include <stdio.h>
#include <string.h>

#define CHECK(cond)                                                          \
    do {                                                                     \
        if (!(cond)) {                                                       \
            fprintf(stderr, "consumer: check failed at line %d: %s\n",       \
                    __LINE__, #cond);                                        \
            return 1;                                                        \
        }                                                                    \
    } while (0)

static unsigned char arena[1 << 16];

int main(void)
{
    dmm_heap_config cfg;
    dmm_heap_preset preset;
    dmm_heap *heap = NULL;
    dmm_heap_check_report rep;
    const char *reason = NULL;
    unsigned char *blocks[32];
    size_t i;

    CHECK(dmm_heap_preset_from_name("p2012", &preset) == DMM_OK);
    cfg = dmm_heap_preset_config(preset);
    if (dmm_heap_is_frozen())
        CHECK(dmm_heap_init(&heap, arena, sizeof arena, NULL) == DMM_OK);
    else {
        CHECK(dmm_heap_config_check(&cfg, &reason) == DMM_OK);
        CHECK(dmm_heap_init(&heap, arena, sizeof arena, &cfg) == DMM_OK);
    }
    CHECK(heap != NULL);

    for (i = 0; i < 32; i++) {
        blocks[i] = dmm_heap_malloc(heap, 8 + 24 * i);
        CHECK(blocks[i] != NULL);
        CHECK(((uintptr_t)blocks[i] % DMM_HEAP_ALIGN) == 0);
        memset(blocks[i], (int)i, 8 + 24 * i);
    }
    for (i = 0; i < 32; i += 2)
        dmm_heap_free(heap, blocks[i]);
    for (i = 1; i < 32; i += 2) {
        size_t j;
        for (j = 0; j < 8 + 24 * i; j++)
            CHECK(blocks[i][j] == (unsigned char)i);
        dmm_heap_free(heap, blocks[i]);
    }
    CHECK(dmm_heap_check(heap, &rep) == DMM_OK);
    CHECK(rep.invariant == DMM_INV_NONE);
    dmm_heap_destroy(heap);

    printf("consumer: dmmkit heap (%s) ok, status name \"%s\"\n",
           dmm_heap_is_frozen() ? "frozen" : "runtime configurable",
           dmm_status_str(DMM_OK));
    return 0;
}
