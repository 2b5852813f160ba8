// tests/malloc/preload_new.cpp - run with libdmm.so preloaded (ctest
// malloc_preload_new): C++'s operator new and delete are libdmm's
// (src/malloc/preload_cxx.c), not libstdc++'s calling libdmm's malloc (which
// also gets the blocks from libdmm: hence the check of where the names
// resolve); blocks from new are counted by libdmm and
// given back by delete; a request that cannot be met still runs the
// new-handler and throws std::bad_alloc; the nothrow form returns nullptr.
// Exit 0 when every check holds, else 1 with one line per failed check.
#include <dlfcn.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <initializer_list>
#include <new>

#include "dmm/malloc.h"

static int failed;
#define CHECK(c)                                                                                                      \
    do {                                                                                                              \
        if (!(c)) {                                                                                                   \
            std::fprintf(stderr, "preload_new: %s:%d: not true: %s\n", __FILE__, __LINE__, #c);                       \
            failed = 1;                                                                                               \
        }                                                                                                             \
    } while (0)

static void *volatile sink; // keeps the compiler from eliding a new/delete pair
static int handler_calls;

static void handler()
{
    handler_calls++;
    std::set_new_handler(nullptr); // the next failure throws
}

int main()
{
    using stats_fn = dmm_malloc_stats (*)();
    auto stats = reinterpret_cast<stats_fn>(dlsym(RTLD_DEFAULT, "dmm_malloc_get_stats"));
    if (!stats) {
        std::fprintf(stderr, "preload_new: libdmm.so is not preloaded\n");
        return 1;
    }
    for (const char *name : {"_Znwm", "_Znam", "_ZdlPv", "_ZdaPv", "_ZdlPvm", "_ZnwmRKSt9nothrow_t"}) {
        Dl_info where{};
        void *sym = dlsym(RTLD_DEFAULT, name);
        bool in_libdmm = sym && dladdr(sym, &where) && where.dli_fname && std::strstr(where.dli_fname, "libdmm");
        if (!in_libdmm)
            std::fprintf(stderr, "preload_new: %s resolves to %s\n", name, sym && where.dli_fname ? where.dli_fname : "?");
        CHECK(in_libdmm);
    }
    const size_t huge = SIZE_MAX / 4; // no allocator can meet it
    uint64_t live0 = stats().live_bytes;
    char *a = new char[5000];
    sink = a;
    CHECK(stats().live_bytes >= live0 + 5000); // counted by libdmm: it came from libdmm
    delete[] static_cast<char *>(sink);
    CHECK(stats().live_bytes == live0);
    int *b = new int(7);
    sink = b;
    CHECK(stats().live_bytes > live0);
    delete static_cast<int *>(sink);
    CHECK(stats().live_bytes == live0);
    void *c = ::operator new(100, std::nothrow);
    sink = c;
    CHECK(c != nullptr && stats().live_bytes > live0);
    ::operator delete(sink, std::nothrow);
    CHECK(stats().live_bytes == live0);
    bool threw = false;
    try {
        sink = ::operator new(huge);
    } catch (const std::bad_alloc &) {
        threw = true;
    }
    CHECK(threw);
    threw = false;
    std::set_new_handler(handler);
    try {
        sink = ::operator new[](huge);
    } catch (const std::bad_alloc &) {
        threw = true;
    }
    CHECK(threw && handler_calls == 1);
    CHECK(::operator new(huge, std::nothrow) == nullptr);
    CHECK(stats().live_bytes == live0);
    return failed;
}
