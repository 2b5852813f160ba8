/*
 * bench/malloc/pairs.c - the malloc/free loops behind
 * bench/results/libdmm_callgrind.md (scripts/malloc_callgrind.sh).
 *
 *   pairs N [pairs]   1024 slots, each step frees a random slot and refills
 *                     it with a random size of 16..515 bytes
 *   pairs N batch     N malloc+free pairs as batches of 1000: 1000 mallocs
 *                     of random sizes 16..256 bytes, then 1000 frees in
 *                     the same order
 *
 * Random numbers from xorshift with a fixed seed, so every allocator gets
 * the same calls.  Run under valgrind --tool=callgrind with each allocator
 * preloaded, the instruction counts differ only by what malloc and free
 * cost.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t x = 88172645463325252ull;

static uint64_t next(void)
{
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return x;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 1000000;
    uint64_t sum = 0;
    if (argc > 2 && !strcmp(argv[2], "batch")) {
        static void *b[1000];
        for (int done = 0; done < n; done += 1000) {
            for (int k = 0; k < 1000; k++) {
                b[k] = malloc(16 + next() % 241);
                ((char *)b[k])[0] = (char)k;
                sum += (uintptr_t)b[k] & 0xff;
            }
            for (int k = 0; k < 1000; k++)
                free(b[k]);
        }
    } else {
        void *slot[1024] = {0};
        for (int i = 0; i < n; i++) {
            uint64_t r = next();
            unsigned k = r & 1023;
            free(slot[k]);
            slot[k] = malloc(16 + (r >> 20) % 500);
            ((char *)slot[k])[0] = (char)i;
            sum += (uintptr_t)slot[k] & 0xff;
        }
        for (int k = 0; k < 1024; k++)
            free(slot[k]);
    }
    printf("%llu\n", (unsigned long long)sum);
    return 0;
}
