/*
 * bench/malloc/pairs.c - the malloc/free pair loop behind
 * bench/results/libdmm_callgrind.md (scripts/malloc_callgrind.sh): 1024
 * slots, each step frees a random slot and refills it with a random size of
 * 16..515 bytes (xorshift, fixed seed), so every allocator gets the same
 * calls.  Run under valgrind --tool=callgrind with each allocator preloaded,
 * the instruction counts differ only by what malloc and free cost.
 */
#include <stdlib.h>
#include <stdio.h>
#include <stdint.h>
int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 1000000;
    void *slot[1024] = {0};
    uint64_t x = 88172645463325252ull, sum = 0;
    for (int i = 0; i < n; i++) {
        x ^= x << 13; x ^= x >> 7; x ^= x << 17;
        unsigned k = x & 1023;
        free(slot[k]);
        size_t sz = 16 + (x >> 20) % 500;
        slot[k] = malloc(sz);
        ((char *)slot[k])[0] = (char)i;
        sum += (uintptr_t)slot[k] & 0xff;
    }
    for (int k = 0; k < 1024; k++) free(slot[k]);
    printf("%llu\n", (unsigned long long)sum);
    return 0;
}
