// tests/trace/test_trace_finish.cpp - dmm_trace_compact (dense renumbering of
// a trace collected with its producer's own numbers) and
// dmm_trace_save (no partial file, the real errno) under the failures
// a user meets: a missing directory, a directory in the way, a file size
// limit (RLIMIT_FSIZE, the unprivileged stand-in for a full disk).
#include <gtest/gtest.h>

#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <fstream>
#include <sstream>

#include "trace_test_util.h"

using namespace dmmt;

namespace {

int rm_entry(const char *p, const struct stat *, int, struct FTW *) { return remove(p); }

struct TmpDir {
    std::string path;
    TmpDir()
    {
        char t[] = "/tmp/dmmt-finish.XXXXXX";
        if (!mkdtemp(t))
            std::abort();
        path = t;
    }
    ~TmpDir() { nftw(path.c_str(), rm_entry, 16, FTW_DEPTH | FTW_PHYS); }
    std::string operator/(const std::string &name) const { return path + "/" + name; }
};

std::vector<std::string> list_dir(const std::string &dir)
{
    std::vector<std::string> out;
    if (DIR *d = opendir(dir.c_str())) {
        while (struct dirent *e = readdir(d))
            if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0)
                out.push_back(e->d_name);
        closedir(d);
    }
    std::sort(out.begin(), out.end());
    return out;
}

std::string slurp(const std::string &path)
{
    std::ifstream f(path, std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

// A valid trace of about n operations with metadata (so its files are a few
// KB: bigger than the file size limits used below).
void sample(dmm_trace *t, size_t n)
{
    Shape sh;
    sh.ops = n;
    sh.meta = true;
    random_trace(t, 7, sh);
}

// ---- dmm_trace_compact -------------------------------------------------------

TEST(TraceCompact, RenumbersObjectsAndThreadsDensely)
{
    Trace t;
    // ids are addresses, threads OS ids, as a recorder would collect them
    push(t.get(), make_op(DMM_T_MALLOC, 4242, 0x7f0010, 24));
    push(t.get(), make_op(DMM_T_FREE, 4242, 0xdead)); // allocation not in the trace
    push(t.get(), make_op(DMM_T_CALLOC, 77, 0x7f0040, 80, 10));
    push(t.get(), make_op(DMM_T_SYNC, 77, 0, 1, 4242)); // stale: removed, not counted
    push(t.get(), make_op(DMM_T_REALLOC, 4242, 0x7f0040, 160));
    push(t.get(), make_op(DMM_T_FREE, 77, 0x7f0010));
    push(t.get(), make_op(DMM_T_MALLOC, 9, 0x7f0010, 8)); // the address again: a new object
    push(t.get(), make_op(DMM_T_REALLOC, 9, 0x7f0040, 0)); // realloc to 0 ends the object
    push(t.get(), make_op(DMM_T_FREE, 9, 0x7f0040));        // so this one names nothing
    push(t.get(), make_op(200, 9, 0x7f0010));               // unknown kind
    push(t.get(), make_op(DMM_T_ALIGNED, 77, 0x7f0100, 64, 64, DMM_TA_MEMALIGN));
    t->threads = 4243;
    uint64_t dropped = 99;
    ASSERT_EQ(dmm_trace_compact(t.get(), &dropped), 0);
    EXPECT_EQ(dropped, 3u);
    struct Want {
        uint8_t kind;
        uint32_t tid;
        uint64_t id, size;
    };
    const Want want[] = {
        {DMM_T_MALLOC, 0, 1, 24}, {DMM_T_CALLOC, 1, 2, 80}, {DMM_T_REALLOC, 0, 2, 160}, {DMM_T_FREE, 1, 1, 0},
        {DMM_T_MALLOC, 2, 3, 8},  {DMM_T_REALLOC, 2, 2, 0}, {DMM_T_ALIGNED, 1, 4, 64},
    };
    ASSERT_EQ(t->n, sizeof want / sizeof want[0]);
    for (size_t i = 0; i < t->n; i++) {
        SCOPED_TRACE("op " + std::to_string(i));
        EXPECT_EQ(t->ops[i].kind, want[i].kind);
        EXPECT_EQ(t->ops[i].tid, want[i].tid);
        EXPECT_EQ(t->ops[i].id, want[i].id);
        EXPECT_EQ(t->ops[i].size, want[i].size);
    }
    EXPECT_EQ(t->ops[1].arg, 10u);                // other fields kept
    EXPECT_EQ(t->ops[6].sub, DMM_TA_MEMALIGN);
    EXPECT_EQ(t->threads, 3u);
    ASSERT_EQ(dmm_trace_add_syncs(t.get()), 0);
    dmm_trace_error e;
    EXPECT_EQ(dmm_trace_validate(t.get(), &e), 0) << e.reason;
}

TEST(TraceCompact, LeavesADenseTraceAsItWas)
{
    Trace a, b;
    Shape sh;
    sh.threads = 3;
    random_trace(a.get(), 11, sh);
    random_trace(b.get(), 11, sh);
    uint64_t dropped = 99;
    ASSERT_EQ(dmm_trace_compact(b.get(), &dropped), 0);
    EXPECT_EQ(dropped, 0u);
    // random_trace reuses freed ids; compact gives each allocation a fresh
    // one, so compare the shape: same operations, kinds, threads and sizes
    size_t ai = 0;
    for (size_t i = 0; i < b->n; i++, ai++) {
        while (a->ops[ai].kind == DMM_T_SYNC)
            ai++;
        ASSERT_LT(ai, a->n);
        EXPECT_EQ(b->ops[i].kind, a->ops[ai].kind);
        EXPECT_EQ(b->ops[i].size, a->ops[ai].size);
    }
    while (ai < a->n && a->ops[ai].kind == DMM_T_SYNC)
        ai++;
    EXPECT_EQ(ai, a->n);
    ASSERT_EQ(dmm_trace_add_syncs(b.get()), 0);
    dmm_trace_error e;
    EXPECT_EQ(dmm_trace_validate(b.get(), &e), 0) << e.reason;
}

// ---- dmm_trace_save ----------------------------------------------------

TEST(TraceSaveAtomic, WritesBothFormsAndReplacesAnOldFile)
{
    TmpDir d;
    Trace t;
    sample(t.get(), 300);
    for (const char *name : {"a.trace", "a.txt"}) {
        std::string p = d / name;
        {
            std::ofstream f(p);
            f << "old contents";
        }
        ASSERT_EQ(dmm_trace_save(t.get(), p.c_str()), 0) << std::strerror(errno);
        Trace back;
        dmm_trace_error e;
        ASSERT_EQ(dmm_trace_load(back.get(), p.c_str(), &e), 0) << e.reason;
        EXPECT_EQ(dmm_trace_hash(back.get()), dmm_trace_hash(t.get()));
    }
    EXPECT_EQ(slurp(d / "a.txt").rfind("dmmtrace 1\n", 0), 0u);
    EXPECT_EQ(list_dir(d.path), (std::vector<std::string>{"a.trace", "a.txt"})) << "temporary files left";
}

TEST(TraceSaveAtomic, MissingDirectoryGivesENOENTAndCreatesNothing)
{
    TmpDir d;
    Trace t;
    sample(t.get(), 10);
    std::string p = d / "no/such/dir/x.trace";
    errno = 0;
    EXPECT_EQ(dmm_trace_save(t.get(), p.c_str()), -1);
    EXPECT_EQ(errno, ENOENT);
    EXPECT_TRUE(list_dir(d.path).empty());
}

TEST(TraceSaveAtomic, DirectoryInTheWayGivesItsErrnoAndLeavesNoTemporary)
{
    TmpDir d;
    Trace t;
    sample(t.get(), 10);
    ASSERT_EQ(mkdir((d / "x.trace").c_str(), 0755), 0);
    errno = 0;
    EXPECT_EQ(dmm_trace_save(t.get(), (d / "x.trace").c_str()), -1);
    EXPECT_EQ(errno, EISDIR);
    EXPECT_EQ(list_dir(d.path), (std::vector<std::string>{"x.trace"}));
    EXPECT_TRUE(list_dir(d / "x.trace").empty());
}

// In a child process (the limit must not touch the test runner): ignore
// SIGXFSZ, set RLIMIT_FSIZE, save.  Returns the child's errno (0 = saved).
int save_under_fsize_limit(const dmm_trace *t, const std::string &path, rlim_t limit)
{
    std::fflush(nullptr);
    pid_t pid = fork();
    if (pid == 0) {
        struct rlimit rl = {limit, limit};
        signal(SIGXFSZ, SIG_IGN);
        if (setrlimit(RLIMIT_FSIZE, &rl) != 0)
            _exit(255);
        errno = 0;
        _exit(dmm_trace_save(t, path.c_str()) == 0 ? 0 : (errno ? errno : 254));
    }
    int st = 0;
    if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
        return -1;
    return WEXITSTATUS(st);
}

TEST(TraceSaveAtomic, FileSizeLimitGivesEFBIGAndKeepsTheOldFile)
{
    TmpDir d;
    Trace t;
    sample(t.get(), 2000);
    for (const char *name : {"big.trace", "big.txt"}) {
        SCOPED_TRACE(name);
        std::string p = d / name;
        {
            std::ofstream f(p);
            f << "the previous trace";
        }
        EXPECT_EQ(save_under_fsize_limit(t.get(), p, 1024), EFBIG);
        EXPECT_EQ(slurp(p), "the previous trace") << "the destination must stay as it was";
        // and without a previous file, nothing appears at all
        std::remove(p.c_str());
        EXPECT_EQ(save_under_fsize_limit(t.get(), p, 1024), EFBIG);
    }
    EXPECT_TRUE(list_dir(d.path).empty()) << "partial or temporary files left";
    // control: the same save succeeds without the limit
    EXPECT_EQ(save_under_fsize_limit(t.get(), d / "big.trace", RLIM_INFINITY), 0);
    EXPECT_EQ(list_dir(d.path), (std::vector<std::string>{"big.trace"}));
}

} // namespace
