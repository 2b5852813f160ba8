/*
 * tests/install/trace_consumer.c - a program outside the dmmkit tree that
 * uses the installed trace library (dmm/trace.h + libdmm_trace, found
 * through pkg-config "dmmkit-trace" or find_package: dmmkit::dmm_trace).
 *
 *   trace_consumer FILE    builds a small trace, saves it to FILE (binary,
 *                          or text when FILE ends in .txt), loads it back
 *                          with dmm_trace_load and checks it round-trips
 *
 * scripts/test.sh (stage "install") builds and runs it against a temporary
 * install prefix.  Exit status 0 means every check passed.
 */
#include <dmm/trace.h>

#include <stdio.h>
#include <string.h>

#define CHECK(cond)                                                          \
    do {                                                                     \
        if (!(cond)) {                                                       \
            fprintf(stderr, "trace_consumer: check failed at line %d: %s\n", \
                    __LINE__, #cond);                                        \
            return 1;                                                        \
        }                                                                    \
    } while (0)

int main(int argc, char **argv)
{
    dmm_trace out, in;
    dmm_trace_error err;
    dmm_trace_op op;
    uint64_t id;

    if (argc != 2) {
        fprintf(stderr, "usage: trace_consumer FILE\n");
        return 2;
    }
    dmm_trace_init(&out);
    for (id = 1; id <= 16; id++) {
        memset(&op, 0, sizeof op);
        op.kind = DMM_T_MALLOC;
        op.id = id;
        op.size = 16 * id;
        CHECK(dmm_trace_push(&out, &op) == 0);
    }
    for (id = 1; id <= 16; id++) {
        memset(&op, 0, sizeof op);
        op.kind = DMM_T_FREE;
        op.id = id;
        CHECK(dmm_trace_push(&out, &op) == 0);
    }
    CHECK(dmm_trace_set_meta(&out, "source=trace_consumer\n") == 0);
    CHECK(dmm_trace_validate(&out, &err) == 0);
    CHECK(dmm_trace_save(&out, argv[1]) == 0);

    dmm_trace_init(&in);
    if (dmm_trace_load(&in, argv[1], &err) != 0) {
        fprintf(stderr, "trace_consumer: %s: %s\n", argv[1], err.reason);
        return 1;
    }
    CHECK(in.n == out.n);
    CHECK(dmm_trace_hash(&in) == dmm_trace_hash(&out));
    printf("trace_consumer: %zu operations saved to %s and loaded back, hash %016llx\n", in.n, argv[1],
           (unsigned long long)dmm_trace_hash(&in));
    dmm_trace_free(&in);
    dmm_trace_free(&out);
    return 0;
}
