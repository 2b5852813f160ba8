// tests/recorder/test_recorder.cpp - the LD_PRELOAD recorder (libdmmrec.so)
// on small programs written for it and on real programs from Debian.
//
// Every test runs a program in a fresh temporary directory with
// LD_PRELOAD=libdmmrec.so, then loads the trace(s) it wrote with
// dmm_trace_load and checks them (dmm_trace_validate plus exact contents
// where the program's behaviour is known).  Real programs that are not
// installed make their test SKIP.  DMMREC_KEEP=1 keeps the directories.
#include <gtest/gtest.h>

#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "dmm/trace.h"

extern char **environ;

namespace {

constexpr uint64_t kMarkBegin = 519889, kMarkEnd = 519890, kMarkMain = 519891;

// ---- processes and files ------------------------------------------------

int rm_entry(const char *p, const struct stat *, int, struct FTW *) { return remove(p); }

struct TmpDir {
    std::string path;
    TmpDir()
    {
        char t[] = "/tmp/dmmrec-test.XXXXXX";
        if (!mkdtemp(t))
            std::abort();
        path = t;
    }
    ~TmpDir()
    {
        const char *keep = std::getenv("DMMREC_KEEP");
        if (keep && *keep && std::strcmp(keep, "0") != 0)
            std::fprintf(stderr, "kept %s\n", path.c_str());
        else
            nftw(path.c_str(), rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    }
    std::string operator/(const std::string &name) const { return path + "/" + name; }
};

std::string slurp(const std::string &path)
{
    std::ifstream f(path, std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

void spit(const std::string &path, const std::string &text)
{
    std::ofstream f(path, std::ios::binary);
    f << text;
}

bool exists(const std::string &path)
{
    struct stat st;
    return stat(path.c_str(), &st) == 0;
}

size_t count_of(const std::string &text, const std::string &what)
{
    size_t n = 0;
    for (size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + 1))
        n++;
    return n;
}

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

struct RunResult {
    int status = -1; // exit code, or 128 + signal
    pid_t pid = -1;
    std::string out, err;
};

using Env = std::vector<std::pair<std::string, std::string>>;

// Runs argv in dir with the recorder preloaded (unless preload is false).
// The environment is ours minus LD_PRELOAD and DMM_TRACE_*, plus env.
// fsize_limit >= 0 runs it under RLIMIT_FSIZE = that many bytes (a full disk
// without privileges); then stderr comes through a pipe (the limit would cut
// a file short) and stdout goes to /dev/null.
RunResult run(const std::vector<std::string> &argv, const Env &env, const TmpDir &dir,
        const std::string &stdin_file = "", bool preload = true, long fsize_limit = -1)
{
    RunResult r;
    std::vector<std::string> envs;
    for (char **e = environ; *e; e++) {
        std::string s = *e;
        if (s.rfind("LD_PRELOAD=", 0) == 0 || s.rfind("DMM_TRACE_", 0) == 0)
            continue;
        envs.push_back(s);
    }
    if (preload)
        envs.push_back(std::string("LD_PRELOAD=") + DMMREC_LIB);
    for (auto &kv : env)
        envs.push_back(kv.first + "=" + kv.second);
    std::vector<char *> av, ev;
    for (auto &s : argv)
        av.push_back(const_cast<char *>(s.c_str()));
    av.push_back(nullptr);
    for (auto &s : envs)
        ev.push_back(const_cast<char *>(s.c_str()));
    ev.push_back(nullptr);
    std::string out = dir / ".stdout", err = dir / ".stderr";
    const bool limited = fsize_limit >= 0;
    int errpipe[2] = {-1, -1};
    if (limited && pipe(errpipe) != 0)
        std::abort();
    std::fflush(nullptr);
    pid_t pid = fork();
    if (pid == 0) {
        int in = open(stdin_file.empty() ? "/dev/null" : stdin_file.c_str(), O_RDONLY);
        int o = limited ? open("/dev/null", O_WRONLY) : open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int e = limited ? errpipe[1] : open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (in < 0 || o < 0 || e < 0 || chdir(dir.path.c_str()) != 0)
            _exit(126);
        dup2(in, 0);
        dup2(o, 1);
        dup2(e, 2);
        if (limited) {
            struct rlimit rl;
            rl.rlim_cur = rl.rlim_max = (rlim_t)fsize_limit;
            close(errpipe[0]);
            if (setrlimit(RLIMIT_FSIZE, &rl) != 0)
                _exit(126);
        }
        execve(av[0], av.data(), ev.data());
        _exit(127);
    }
    r.pid = pid;
    if (limited) {
        // the child's stderr is small: read it all, then reap
        char buf[4096];
        ssize_t n;
        close(errpipe[1]);
        while ((n = read(errpipe[0], buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR))
            if (n > 0)
                r.err.append(buf, (size_t)n);
        close(errpipe[0]);
    }
    int st = 0;
    if (pid > 0 && waitpid(pid, &st, 0) == pid)
        r.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    if (!limited) {
        r.out = slurp(out);
        r.err = slurp(err);
        unlink(out.c_str());
        unlink(err.c_str());
    }
    return r;
}

// An installed program: the Debian one in /usr/bin first, else from PATH.
std::string find_program(const std::string &name)
{
    for (const char *d : {"/usr/bin", "/bin"}) {
        std::string p = std::string(d) + "/" + name;
        if (access(p.c_str(), X_OK) == 0)
            return p;
    }
    if (const char *path = std::getenv("PATH")) {
        std::stringstream ss(path);
        std::string d;
        while (std::getline(ss, d, ':')) {
            std::string p = d + "/" + name;
            if (!d.empty() && access(p.c_str(), X_OK) == 0)
                return p;
        }
    }
    return "";
}

// ---- traces ---------------------------------------------------------------

struct Trace {
    dmm_trace t;
    bool loaded = false;
    std::string error;
    explicit Trace(const std::string &path)
    {
        dmm_trace_error e;
        std::memset(&e, 0, sizeof e);
        loaded = dmm_trace_load(&t, path.c_str(), &e) == 0;
        if (!loaded)
            error = std::string("load ") + path + ": offset " + std::to_string(e.offset) + ": " + e.reason;
    }
    ~Trace()
    {
        if (loaded)
            dmm_trace_free(&t);
    }
    Trace(const Trace &) = delete;
    Trace &operator=(const Trace &) = delete;

    std::string validate() const
    {
        dmm_trace_error e;
        if (dmm_trace_validate(&t, &e) == 0)
            return "";
        return "op " + std::to_string(e.offset) + ": " + e.reason;
    }
    std::string meta(const std::string &key) const
    {
        std::stringstream ss(t.meta ? t.meta : "");
        std::string line;
        while (std::getline(ss, line))
            if (line.rfind(key + "=", 0) == 0)
                return line.substr(key.size() + 1);
        return "";
    }
    size_t count(int kind, int64_t size = -1) const
    {
        size_t n = 0;
        for (size_t i = 0; i < t.n; i++)
            if (t.ops[i].kind == kind && (size < 0 || t.ops[i].size == (uint64_t)size))
                n++;
        return n;
    }
    // Index of the first op of kind with the given size, or -1.
    long find(int kind, uint64_t size, size_t from = 0) const
    {
        for (size_t i = from; i < t.n; i++)
            if (t.ops[i].kind == kind && t.ops[i].size == size)
                return (long)i;
        return -1;
    }
    // Ids of objects allocated with the given size.
    std::set<uint64_t> ids_of_size(uint64_t size) const
    {
        std::set<uint64_t> s;
        for (size_t i = 0; i < t.n; i++) {
            const dmm_trace_op &o = t.ops[i];
            if ((o.kind == DMM_T_MALLOC || o.kind == DMM_T_CALLOC || o.kind == DMM_T_ALIGNED) && o.size == size)
                s.insert(o.id);
        }
        return s;
    }
    size_t frees_of(const std::set<uint64_t> &ids) const
    {
        size_t n = 0;
        for (size_t i = 0; i < t.n; i++)
            if (t.ops[i].kind == DMM_T_FREE && ids.count(t.ops[i].id))
                n++;
        return n;
    }
};

#define EXPECT_GOOD_TRACE(tr)                                      \
    do {                                                           \
        ASSERT_TRUE((tr).loaded) << (tr).error;                    \
        EXPECT_EQ((tr).validate(), "");                            \
        EXPECT_EQ((tr).meta("source"), "dmmrec");                  \
        EXPECT_EQ((tr).meta("validate"), "ok");                    \
        EXPECT_EQ((tr).meta("dropped_ops"), "0");                  \
    } while (0)

std::string kv(const std::string &text, const std::string &key)
{
    size_t p = text.find(key + "=");
    if (p == std::string::npos)
        return "";
    p += key.size() + 1;
    size_t e = text.find_first_of(" \n", p);
    return text.substr(p, e == std::string::npos ? std::string::npos : e - p);
}

// ---- (1) a known sequence: every API ------------------------------------------

struct Expect {
    int kind;
    const char *obj;
    uint64_t size;
    uint64_t arg;
    int sub;
};

void check_known(const Trace &tr, bool timestamps)
{
    const uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
    const std::vector<Expect> want = {
        {DMM_T_MALLOC, "A", 100, 0, 0},
        {DMM_T_CALLOC, "B", 240, 10, 0},
        {DMM_T_REALLOC, "A", 200, 0, 0},
        {DMM_T_REALLOC, "A", 5000, 0, 0},
        {DMM_T_REALLOC, "A", 50, 0, 0},
        {DMM_T_ALIGNED, "C", 300, 64, DMM_TA_POSIX_MEMALIGN},
        {DMM_T_ALIGNED, "D", 256, 128, DMM_TA_ALIGNED_ALLOC},
        {DMM_T_ALIGNED, "E", 100, 32, DMM_TA_MEMALIGN},
        {DMM_T_ALIGNED, "F", 1000, page, DMM_TA_VALLOC},
        {DMM_T_ALIGNED, "G", 5000, page, DMM_TA_PVALLOC},
        {DMM_T_MALLOC, "H", 80, 0, 0},
        {DMM_T_REALLOC, "H", 160, 0, 0},
        {DMM_T_MALLOC, "I", 64, 0, 0},
        {DMM_T_REALLOC, "I", 0, 0, 0},
        {DMM_T_MALLOC, "U", 4096, 0, 0},
        {DMM_T_FREE, "U", 0, 0, 0},
        {DMM_T_MALLOC, "Z", 0, 0, 0},
        {DMM_T_FREE, "Z", 0, 0, 0},
        {DMM_T_ALIGNED, "W", 100, 64, DMM_TA_MEMALIGN},
        {DMM_T_FREE, "W", 0, 0, 0},
        {DMM_T_FREE, "A", 0, 0, 0},
        {DMM_T_FREE, "B", 0, 0, 0},
        {DMM_T_FREE, "C", 0, 0, 0},
        {DMM_T_FREE, "D", 0, 0, 0},
        {DMM_T_FREE, "E", 0, 0, 0},
        {DMM_T_FREE, "F", 0, 0, 0},
        {DMM_T_FREE, "G", 0, 0, 0},
        {DMM_T_FREE, "H", 0, 0, 0},
    };
    long b = tr.find(DMM_T_MALLOC, kMarkBegin);
    ASSERT_GE(b, 0) << "begin marker not recorded";
    ASSERT_LT((size_t)b + 1, tr.t.n);
    ASSERT_EQ(tr.t.ops[b + 1].kind, DMM_T_FREE);
    ASSERT_EQ(tr.t.ops[b + 1].id, tr.t.ops[b].id);
    long e = tr.find(DMM_T_MALLOC, kMarkEnd, (size_t)b);
    ASSERT_GT(e, b) << "end marker not recorded";
    uint32_t tid = tr.t.ops[b].tid;
    std::vector<dmm_trace_op> got;
    for (long i = b + 2; i < e; i++)
        if (tr.t.ops[i].tid == tid)
            got.push_back(tr.t.ops[i]);
    ASSERT_EQ(got.size(), want.size()) << "operations between the markers";
    std::map<std::string, uint64_t> ids;
    std::set<uint64_t> seen;
    for (size_t i = 0; i < want.size(); i++) {
        const Expect &w = want[i];
        const dmm_trace_op &o = got[i];
        SCOPED_TRACE("expected op " + std::to_string(i) + " on object " + w.obj);
        ASSERT_EQ((int)o.kind, w.kind);
        if (w.kind != DMM_T_FREE) {
            EXPECT_EQ(o.size, w.size);
        }
        if (w.kind == DMM_T_CALLOC || w.kind == DMM_T_ALIGNED) {
            EXPECT_EQ(o.arg, w.arg);
        }
        if (w.kind == DMM_T_ALIGNED) {
            EXPECT_EQ((int)o.sub, w.sub);
        }
        auto it = ids.find(w.obj);
        if (w.kind == DMM_T_MALLOC || w.kind == DMM_T_CALLOC || w.kind == DMM_T_ALIGNED) {
            ASSERT_TRUE(it == ids.end());
            EXPECT_TRUE(seen.insert(o.id).second) << "id reused: " << o.id;
            ids[w.obj] = o.id;
        } else {
            ASSERT_TRUE(it != ids.end());
            EXPECT_EQ(o.id, it->second);
        }
    }
    // the calls the recorder passes through are counted in the metadata
    EXPECT_GE(std::stoull(tr.meta("unknown_frees")), 1u);
    EXPECT_GE(std::stoull(tr.meta("unknown_reallocs")), 1u);
    EXPECT_GE(std::stoull(tr.meta("usable_size_calls")), 2u);
    EXPECT_EQ(tr.t.has_time != 0, timestamps);
    EXPECT_EQ(tr.meta("timestamps"), timestamps ? "on" : "off");
    if (timestamps) {
        uint64_t last = 0, nonzero = 0;
        for (size_t i = 0; i < tr.t.n; i++) {
            if (tr.t.ops[i].tid != tid)
                continue;
            EXPECT_GE(tr.t.ops[i].t_ns, last) << "op " << i;
            last = tr.t.ops[i].t_ns;
            nonzero += last != 0;
        }
        EXPECT_GT(nonzero, 0u);
    }
}

TEST(Recorder, KnownSequence)
{
    TmpDir d;
    RunResult r = run({REC_KNOWN}, {{"DMM_TRACE_OUT", "known.trace"}}, d);
    ASSERT_EQ(r.status, 0) << r.err;
    Trace tr(d / "known.trace");
    EXPECT_GOOD_TRACE(tr);
    check_known(tr, false);
    EXPECT_EQ(tr.meta("recorder_version"), "1.0");
    EXPECT_EQ(tr.meta("pid"), std::to_string(r.pid));
    EXPECT_NE(tr.meta("program").find("rec_known"), std::string::npos) << tr.meta("program");
    EXPECT_FALSE(tr.meta("start_time").empty());
}

TEST(Recorder, KnownSequenceWithTimestampsAndTextOutput)
{
    TmpDir d;
    // a name ending in .txt is written in the text form
    RunResult r = run({REC_KNOWN}, {{"DMM_TRACE_OUT", "known.txt"}, {"DMM_TRACE_TIME", "1"}}, d);
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(slurp(d / "known.txt").rfind("dmmtrace 1\n", 0), 0u);
    Trace tr(d / "known.txt");
    EXPECT_GOOD_TRACE(tr);
    check_known(tr, true);
}

TEST(Recorder, NotPreloadedNothingWritten)
{
    // control: the same program without the recorder leaves no trace, so
    // the other tests really measure the recorder
    TmpDir d;
    RunResult r = run({REC_KNOWN}, {{"DMM_TRACE_OUT", "known.trace"}}, d, "", false);
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_FALSE(exists(d / "known.trace"));
}

TEST(Recorder, DisabledByEnvironment)
{
    TmpDir d;
    RunResult r = run({REC_KNOWN}, {{"DMM_TRACE_OUT", "known.trace"}, {"DMM_TRACE_DISABLE", "1"}}, d);
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_FALSE(exists(d / "known.trace"));
}

TEST(Recorder, CfreeAndSizedFrees)
{
    TmpDir d;
    RunResult r = run({REC_MISC, "extras"}, {{"DMM_TRACE_OUT", "extras.trace"}}, d);
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(kv(r.out, "found"), "3");
    Trace tr(d / "extras.trace");
    EXPECT_GOOD_TRACE(tr);
    for (uint64_t size : {4321u, 4322u, 4323u}) {
        SCOPED_TRACE(size);
        auto ids = tr.ids_of_size(size);
        EXPECT_EQ(ids.size(), 1u);
        EXPECT_EQ(tr.frees_of(ids), 1u);
    }
}

// ---- (2) threads: cross-thread frees through a shared queue --------------------

TEST(Recorder, ThreadsCrossThreadFrees)
{
    TmpDir d;
    RunResult r = run({REC_THREADS, "400"}, {{"DMM_TRACE_OUT", "threads.trace"}}, d);
    ASSERT_EQ(r.status, 0) << r.err;
    const std::string &o = r.out;
    ASSERT_FALSE(kv(o, "malloc").empty()) << o;
    Trace tr(d / "threads.trace");
    EXPECT_GOOD_TRACE(tr);
    long m = tr.find(DMM_T_MALLOC, kMarkMain);
    ASSERT_GE(m, 0);
    uint32_t main_tid = tr.t.ops[m].tid;
    std::map<int, size_t> n;
    std::map<uint64_t, uint32_t> owner;
    std::set<uint32_t> workers;
    size_t xfree = 0, xrealloc = 0, syncs = 0;
    for (size_t i = 0; i < tr.t.n; i++) {
        const dmm_trace_op &op = tr.t.ops[i];
        if (op.kind == DMM_T_SYNC) {
            syncs++;
            continue;
        }
        if (op.tid == main_tid)
            continue;
        workers.insert(op.tid);
        n[op.kind]++;
        if (op.kind == DMM_T_MALLOC || op.kind == DMM_T_CALLOC || op.kind == DMM_T_ALIGNED)
            owner[op.id] = op.tid;
        else if (owner.count(op.id) && owner[op.id] != op.tid)
            (op.kind == DMM_T_FREE ? xfree : xrealloc)++;
    }
    EXPECT_EQ(workers.size(), 4u);
    EXPECT_EQ(std::to_string(n[DMM_T_MALLOC]), kv(o, "malloc"));
    EXPECT_EQ(std::to_string(n[DMM_T_CALLOC]), kv(o, "calloc"));
    EXPECT_EQ(std::to_string(n[DMM_T_REALLOC]), kv(o, "realloc"));
    EXPECT_EQ(std::to_string(n[DMM_T_ALIGNED]), kv(o, "aligned"));
    EXPECT_EQ(std::to_string(n[DMM_T_FREE]), kv(o, "free"));
    EXPECT_EQ(std::to_string(xfree), kv(o, "xfree"));
    EXPECT_EQ(std::to_string(xrealloc), kv(o, "xrealloc"));
    EXPECT_GT(xfree, 0u);
    EXPECT_GT(syncs, 0u) << "cross-thread frees need sync points";
    EXPECT_GE(tr.t.threads, 5u);
}

TEST(Recorder, ManyShortLivedThreads)
{
    TmpDir d;
    RunResult r = run({REC_MISC, "threads", "300"}, {{"DMM_TRACE_OUT", "churn.trace"}}, d);
    ASSERT_EQ(r.status, 0) << r.err;
    Trace tr(d / "churn.trace");
    EXPECT_GOOD_TRACE(tr);
    EXPECT_EQ(tr.count(DMM_T_MALLOC, 321), 300u);
    EXPECT_EQ(tr.frees_of(tr.ids_of_size(321)), 300u);
    std::set<uint32_t> tids;
    for (size_t i = 0; i < tr.t.n; i++)
        if (tr.t.ops[i].kind == DMM_T_MALLOC && tr.t.ops[i].size == 321)
            tids.insert(tr.t.ops[i].tid);
    EXPECT_EQ(tids.size(), 300u) << "one thread index per thread";
    EXPECT_LT(*tids.rbegin(), tr.t.threads);
    EXPECT_LE(tr.t.threads, 300u + 8u) << "thread indices are dense";
}

// ---- (3) fork and exec -----------------------------------------------------------

TEST(Recorder, ForkChildStopsByDefault)
{
    TmpDir d;
    RunResult r = run({REC_MISC, "fork"}, {{"DMM_TRACE_OUT", "fork.trace"}}, d);
    ASSERT_EQ(r.status, 0) << r.err;
    std::string child = kv(r.out, "child");
    ASSERT_FALSE(child.empty()) << r.out;
    Trace tr(d / "fork.trace");
    EXPECT_GOOD_TRACE(tr);
    EXPECT_EQ(tr.meta("pid"), std::to_string(r.pid)) << "the child must not overwrite the parent's trace";
    EXPECT_EQ(tr.count(DMM_T_MALLOC, 555), 5u);
    EXPECT_EQ(tr.frees_of(tr.ids_of_size(555)), 5u);
    EXPECT_EQ(tr.count(DMM_T_MALLOC, 777), 0u);
    EXPECT_FALSE(exists(d / ("fork.trace." + child)));
    EXPECT_EQ(list_dir(d.path), std::vector<std::string>{"fork.trace"});
}

TEST(Recorder, ForkFollowWritesChildTrace)
{
    TmpDir d;
    RunResult r = run({REC_MISC, "fork"}, {{"DMM_TRACE_OUT", "fork.trace"}, {"DMM_TRACE_FORK", "follow"}}, d);
    ASSERT_EQ(r.status, 0) << r.err;
    std::string child = kv(r.out, "child");
    ASSERT_FALSE(child.empty()) << r.out;
    Trace parent(d / "fork.trace");
    EXPECT_GOOD_TRACE(parent);
    EXPECT_EQ(parent.meta("pid"), std::to_string(r.pid));
    EXPECT_EQ(parent.count(DMM_T_MALLOC, 555), 5u);
    EXPECT_EQ(parent.count(DMM_T_MALLOC, 777), 0u);
    Trace kid(d / ("fork.trace." + child));
    EXPECT_GOOD_TRACE(kid);
    EXPECT_EQ(kid.meta("pid"), child);
    EXPECT_EQ(kid.meta("forked_from"), std::to_string(r.pid));
    EXPECT_EQ(kid.meta("fork_mode"), "follow");
    EXPECT_EQ(kid.count(DMM_T_MALLOC, 777), 7u);
    EXPECT_EQ(kid.frees_of(kid.ids_of_size(777)), 7u);
    EXPECT_EQ(kid.count(DMM_T_MALLOC, 555), 0u) << "the parent's records must not leak into the child";
    // the child freed a block it inherited: passed through, not recorded
    EXPECT_GE(std::stoull(kid.meta("unknown_frees")), 1u);
}

TEST(Recorder, ForkFollowDefaultNames)
{
    TmpDir d;
    RunResult r = run({REC_MISC, "fork"}, {{"DMM_TRACE_FORK", "follow"}}, d);
    ASSERT_EQ(r.status, 0) << r.err;
    std::string child = kv(r.out, "child");
    Trace parent(d / ("dmm-" + std::to_string(r.pid) + ".trace"));
    EXPECT_GOOD_TRACE(parent);
    Trace kid(d / ("dmm-" + child + ".trace"));
    EXPECT_GOOD_TRACE(kid);
    EXPECT_EQ(kid.count(DMM_T_MALLOC, 777), 7u);
}

TEST(Recorder, ExecedChildWritesItsOwnTrace)
{
    TmpDir d;
    RunResult r = run({REC_MISC, "exec"}, {{"DMM_TRACE_OUT", "exec.trace"}}, d);
    ASSERT_EQ(r.status, 0) << r.err;
    std::string child = kv(r.out, "child");
    ASSERT_FALSE(child.empty()) << r.out;
    Trace parent(d / "exec.trace");
    EXPECT_GOOD_TRACE(parent);
    EXPECT_EQ(parent.meta("pid"), std::to_string(r.pid));
    EXPECT_EQ(parent.count(DMM_T_MALLOC, 999), 0u);
    Trace kid(d / ("exec.trace." + child));
    EXPECT_GOOD_TRACE(kid);
    EXPECT_NE(kid.meta("program").find("execchild"), std::string::npos) << kid.meta("program");
    EXPECT_EQ(kid.count(DMM_T_MALLOC, 999), 9u);
    EXPECT_EQ(kid.frees_of(kid.ids_of_size(999)), 9u);
}

TEST(Recorder, ExecedChildInAnotherDirectoryWritesBesideTheRoot)
{
    // A relative DMM_TRACE_OUT (and status file) is the start directory's:
    // a child that cd's before it execs (a shell script, pyenv's shims)
    // writes there too, not into a missing OUT path under its own cwd.
    TmpDir d;
    ASSERT_EQ(mkdir((d / "elsewhere").c_str(), 0755), 0);
    RunResult r = run({REC_MISC, "exec", d / "elsewhere"},
                      {{"DMM_TRACE_OUT", "out.trace"}, {"DMM_TRACE_SUMMARY", "status.txt"}}, d);
    ASSERT_EQ(r.status, 0) << r.err;
    std::string child = kv(r.out, "child");
    ASSERT_FALSE(child.empty()) << r.out;
    Trace kid(d / ("out.trace." + child));
    EXPECT_GOOD_TRACE(kid);
    EXPECT_EQ(kid.count(DMM_T_MALLOC, 999), 9u);
    EXPECT_FALSE(exists(d / ("elsewhere/out.trace." + child)));
    std::string status = slurp(d / "status.txt");
    EXPECT_EQ(count_of(status, "(trace not written)"), 0u) << status;
    EXPECT_EQ(count_of(status, "dmmrec: " + (d / ("out.trace." + child)) + ": "), 1u) << status;
    EXPECT_EQ(count_of(status, "dmmrec: " + (d / "out.trace") + ": "), 1u) << status;
    EXPECT_FALSE(exists(d / "elsewhere/status.txt"));
}

// ---- snapshots on a signal -------------------------------------------------------

TEST(Recorder, SignalSnapshot)
{
    TmpDir d;
    RunResult r = run({REC_MISC, "signal"}, {{"DMM_TRACE_OUT", "sig.trace"}, {"DMM_TRACE_SIGNAL", "USR2"}}, d);
    ASSERT_EQ(r.status, 0) << r.err;
    Trace snap(d / "sig.trace.1");
    EXPECT_GOOD_TRACE(snap);
    EXPECT_EQ(snap.meta("snapshot"), "1");
    EXPECT_EQ(snap.count(DMM_T_MALLOC, 333), 3u);
    EXPECT_EQ(snap.count(DMM_T_MALLOC, 444), 0u);
    Trace fin(d / "sig.trace");
    EXPECT_GOOD_TRACE(fin);
    EXPECT_EQ(fin.meta("snapshot"), "");
    EXPECT_EQ(fin.count(DMM_T_MALLOC, 333), 3u);
    EXPECT_EQ(fin.count(DMM_T_MALLOC, 444), 4u);
    EXPECT_EQ(fin.frees_of(fin.ids_of_size(444)), 4u);
}

// ---- (4) errno ------------------------------------------------------------------------

TEST(Recorder, ErrnoPreserved)
{
    TmpDir d;
    RunResult r = run({REC_MISC, "errno"}, {{"DMM_TRACE_OUT", "errno.trace"}}, d);
    EXPECT_EQ(r.status, 0) << r.err;
    Trace tr(d / "errno.trace");
    EXPECT_GOOD_TRACE(tr);
    // 60000 blocks: several record chunks and address-map growth happened
    EXPECT_EQ(tr.count(DMM_T_MALLOC, 1234), 60000u);
    EXPECT_EQ(tr.frees_of(tr.ids_of_size(1234)), 60000u);
}

// ---- (5) C++ and real programs --------------------------------------------------

TEST(Recorder, CxxNewDeleteReachMalloc)
{
    TmpDir d;
    RunResult r = run({REC_CXX}, {{"DMM_TRACE_OUT", "cxx.trace"}}, d);
    ASSERT_EQ(r.status, 0) << r.err;
    Trace tr(d / "cxx.trace");
    EXPECT_GOOD_TRACE(tr);
    auto arr = tr.ids_of_size(1234 * sizeof(int));
    EXPECT_GE(arr.size(), 1u) << "new int[1234] not seen";
    EXPECT_GE(tr.frees_of(arr), 1u) << "delete[] not seen";
    size_t aligned64 = 0;
    for (size_t i = 0; i < tr.t.n; i++)
        if (tr.t.ops[i].kind == DMM_T_ALIGNED && tr.t.ops[i].arg == 64)
            aligned64++;
    EXPECT_GE(aligned64, 1u) << "aligned operator new not seen";
    EXPECT_GE(tr.count(DMM_T_MALLOC), 1000u + 500u) << "map nodes and shared_ptrs";
    EXPECT_GE(tr.count(DMM_T_FREE), 1000u + 500u);
}

void real_program(const std::vector<std::string> &argv, const Env &extra, const std::string &stdin_text,
                  size_t min_ops, uint32_t min_threads = 1)
{
    TmpDir d;
    std::string in;
    if (!stdin_text.empty()) {
        in = d / "stdin.txt";
        spit(in, stdin_text);
    }
    Env env = extra;
    env.push_back({"DMM_TRACE_OUT", "real.trace"});
    RunResult r = run(argv, env, d, in);
    ASSERT_EQ(r.status, 0) << argv[0] << " failed: " << r.err;
    Trace tr(d / "real.trace");
    EXPECT_GOOD_TRACE(tr);
    EXPECT_GE(tr.t.n, min_ops);
    EXPECT_GE(tr.count(DMM_T_MALLOC) + tr.count(DMM_T_CALLOC), 1u);
    EXPECT_GE(tr.count(DMM_T_FREE), 1u);
    EXPECT_GE(tr.t.threads, min_threads);
    if (min_threads > 1) {
        EXPECT_GT(tr.count(DMM_T_SYNC), 0u);
    }
}

TEST(RecorderReal, Python3DictListChurn)
{
    std::string py = find_program("python3");
    if (py.empty())
        GTEST_SKIP() << "python3 not installed";
    real_program({py, "-c",
                  "d = {}\n"
                  "for i in range(20000):\n"
                  "    d[str(i)] = [i] * (i % 97)\n"
                  "l = sorted(d.items(), key=lambda kv: len(kv[1]))\n"
                  "s = ''.join(str(x) for x in range(20000))\n"
                  "del d\n"
                  "print(len(l), len(s))\n"},
                 {}, "", 1000);
}

TEST(RecorderReal, Python3Threads)
{
    std::string py = find_program("python3");
    if (py.empty())
        GTEST_SKIP() << "python3 not installed";
    // PYTHONMALLOC=malloc: every object goes through malloc, so the threads
    // allocate and free each other's objects
    real_program({py, "-c",
                  "import threading, queue\n"
                  "q = queue.Queue()\n"
                  "def make(n):\n"
                  "    for i in range(3000):\n"
                  "        q.put(['x' * (i % 300), i, n])\n"
                  "def eat():\n"
                  "    for i in range(3000):\n"
                  "        q.get()\n"
                  "ts = [threading.Thread(target=make, args=(k,)) for k in range(2)]\n"
                  "ts += [threading.Thread(target=eat) for k in range(2)]\n"
                  "for t in ts: t.start()\n"
                  "for t in ts: t.join()\n"},
                 {{"PYTHONMALLOC", "malloc"}}, "", 10000, 3);
}

TEST(RecorderReal, Sqlite3Script)
{
    std::string sq = find_program("sqlite3");
    if (sq.empty())
        GTEST_SKIP() << "sqlite3 not installed (apt package sqlite3)";
    real_program({sq, ":memory:"}, {},
                 "CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT, v REAL);\n"
                 "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 5000)\n"
                 "  INSERT INTO t(name, v) SELECT printf('name-%d', x), x * 0.5 FROM c;\n"
                 "CREATE INDEX t_name ON t(name);\n"
                 "SELECT count(*), sum(v) FROM t WHERE name LIKE 'name-1%';\n"
                 "SELECT substr(name, 1, 6) AS k, count(*) FROM t GROUP BY k ORDER BY k LIMIT 3;\n"
                 "DELETE FROM t WHERE id % 3 = 0;\n"
                 "SELECT count(*) FROM t;\n",
                 1000);
}

TEST(RecorderReal, GccCompilesAFile)
{
    std::string gcc = find_program("gcc");
    if (gcc.empty())
        GTEST_SKIP() << "gcc not installed";
    TmpDir d;
    spit(d / "x.c",
         "#include <stdio.h>\n"
         "#include <stdlib.h>\n"
         "struct node { struct node *next; int v; };\n"
         "int sum(struct node *n) { int s = 0; for (; n; n = n->next) s += n->v; return s; }\n"
         "int main(void) { struct node *h = NULL; for (int i = 0; i < 10; i++) {\n"
         "  struct node *n = malloc(sizeof *n); n->v = i; n->next = h; h = n; }\n"
         "  printf(\"%d\\n\", sum(h)); return 0; }\n");
    // gcc is a driver: it runs cc1 and as as separate programs (fork+exec).
    // Each exec'd program loads the recorder afresh and writes
    // gcc.trace.<pid>; the driver itself writes gcc.trace.
    RunResult r = run({gcc, "-O1", "-c", "x.c", "-o", "x.o"}, {{"DMM_TRACE_OUT", "gcc.trace"}}, d);
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_TRUE(exists(d / "x.o"));
    size_t traces = 0, cc1_ops = 0;
    for (const std::string &f : list_dir(d.path)) {
        if (f.rfind("gcc.trace", 0) != 0)
            continue;
        traces++;
        Trace tr(d / f);
        SCOPED_TRACE(f);
        EXPECT_GOOD_TRACE(tr);
        EXPECT_GT(tr.t.n, 0u);
        // argv[0] is cc1 (the word may appear elsewhere: as's input is a
        // temporary /tmp/ccXXXXXX.s with a random name)
        std::string prog = tr.meta("program");
        prog = prog.substr(0, prog.find(' '));
        if (prog == "cc1" || (prog.size() > 4 && prog.compare(prog.size() - 4, 4, "/cc1") == 0))
            cc1_ops = tr.t.n;
    }
    EXPECT_GE(traces, 2u) << "driver and cc1 at least";
    EXPECT_GT(cc1_ops, 1000u) << "no cc1 trace";
}

// ---- scripts/record.sh ---------------------------------------------------------------

TEST(Recorder, RecordScript)
{
    TmpDir d;
    RunResult r = run({"/bin/bash", RECORD_SH, "-o", "k.trace", "--", REC_KNOWN}, {{"DMM_REC_LIB", DMMREC_LIB}}, d, "",
                false);
    ASSERT_EQ(r.status, 0) << r.out << r.err;
    EXPECT_NE(r.err.find("k.trace"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(" ops ("), std::string::npos) << r.err;
    Trace tr(d / "k.trace");
    EXPECT_GOOD_TRACE(tr);
    check_known(tr, false);
    // the program's own exit status is passed on
    r = run({"/bin/bash", RECORD_SH, "-o", "f.trace", "--", "/bin/sh", "-c", "exit 3"}, {{"DMM_REC_LIB", DMMREC_LIB}},
            d, "", false);
    EXPECT_EQ(r.status, 3) << r.err;
    // bad usage is refused
    r = run({"/bin/bash", RECORD_SH, "-o", "g.trace"}, {{"DMM_REC_LIB", DMMREC_LIB}}, d, "", false);
    EXPECT_EQ(r.status, 2) << r.err;
    r = run({"/bin/bash", RECORD_SH, "-o", "g.trace", "--", "/nonexistent/prog"}, {{"DMM_REC_LIB", DMMREC_LIB}}, d,
            "", false);
    EXPECT_NE(r.status, 0);
    EXPECT_NE(r.err.find("nonexistent"), std::string::npos) << r.err;
}

// ---- a trace that cannot be written: one message with the real cause ------------

// The file size limit for the "full disk" cases: the recorder's one-line
// failure report fits (about 60 bytes plus the path), a trace of rec_known
// (its metadata alone is longer; checked below) does not.
constexpr long kSmallDisk = 256;

TEST(RecorderFailure, FullDiskOneMessageNoPartialFile)
{
    TmpDir d;
    // control: without the limit the same run writes the trace, and it is
    // bigger than the limit
    RunResult r = run({REC_KNOWN}, {{"DMM_TRACE_OUT", "big.trace"}}, d);
    ASSERT_EQ(r.status, 0) << r.err;
    struct stat st;
    ASSERT_EQ(stat((d / "big.trace").c_str(), &st), 0);
    ASSERT_GT(st.st_size, kSmallDisk);
    std::remove((d / "big.trace").c_str());

    for (const char *name : {"known.trace", "known.txt"}) {
        SCOPED_TRACE(name);
        r = run({REC_KNOWN}, {{"DMM_TRACE_OUT", name}}, d, "", true, kSmallDisk);
        // the program is not killed by SIGXFSZ and keeps its exit status
        EXPECT_EQ(r.status, 0) << r.err;
        EXPECT_EQ(r.err, "dmmrec: cannot write " + (d / name) + ": File too large (trace not written)\n");
        EXPECT_TRUE(list_dir(d.path).empty()) << "partial or temporary file left";
    }
}

TEST(RecorderFailure, UnwritableDestinationSaysWhy)
{
    TmpDir d;
    RunResult r = run({REC_KNOWN}, {{"DMM_TRACE_OUT", "no/such/dir/k.trace"}}, d);
    EXPECT_EQ(r.status, 0);
    EXPECT_EQ(r.err, "dmmrec: cannot write " + (d / "no/such/dir/k.trace") +
                             ": No such file or directory (trace not written)\n");
    EXPECT_TRUE(list_dir(d.path).empty());
    // a directory where the trace should go: the temporary file is written,
    // the rename fails, and the temporary file goes away
    ASSERT_EQ(mkdir((d / "k.trace").c_str(), 0755), 0);
    r = run({REC_KNOWN}, {{"DMM_TRACE_OUT", "k.trace"}}, d);
    EXPECT_EQ(r.status, 0);
    EXPECT_EQ(r.err, "dmmrec: cannot write " + (d / "k.trace") + ": Is a directory (trace not written)\n");
    EXPECT_EQ(list_dir(d.path), std::vector<std::string>{"k.trace"});
    EXPECT_TRUE(list_dir(d / "k.trace").empty());
}

TEST(RecorderFailure, RecordScriptReportsTheRecordersCauseOnly)
{
    TmpDir d;
    const Env env = {{"DMM_REC_LIB", DMMREC_LIB}, {"TMPDIR", d.path}};
    RunResult r = run({"/bin/bash", RECORD_SH, "-o", "k.trace", "--", REC_KNOWN}, env, d, "", false, kSmallDisk);
    // the program succeeded, the trace was not written: 1
    EXPECT_EQ(r.status, 1) << r.err;
    EXPECT_EQ(r.err, "record: cannot write " + (d / "k.trace") + ": File too large (trace not written)\n");
    EXPECT_EQ(count_of(r.err, "statically linked"), 0u);
    EXPECT_TRUE(list_dir(d.path).empty()) << "partial, temporary or status file left";

    // the program's own failure status is kept
    r = run({"/bin/bash", RECORD_SH, "-o", "k.trace", "--", REC_MISC, "exit", "3"}, env, d, "", false, kSmallDisk);
    EXPECT_EQ(r.status, 3) << r.err;
    EXPECT_EQ(count_of(r.err, "(trace not written)"), 1u) << r.err;
    EXPECT_EQ(count_of(r.err, "statically linked"), 0u) << r.err;
    EXPECT_TRUE(list_dir(d.path).empty());
}

TEST(RecorderFailure, RecordScriptWhenEvenTheStatusFileIsFull)
{
    TmpDir d;
    // limit 0: neither the trace nor record.sh's status file can take a byte;
    // the recorder says why on stderr itself, record.sh only adds that it
    // got no report, and blames nothing else
    const Env env = {{"DMM_REC_LIB", DMMREC_LIB}, {"TMPDIR", d.path}};
    RunResult r = run({"/bin/bash", RECORD_SH, "-o", "k.trace", "--", REC_KNOWN}, env, d, "", false, 0);
    EXPECT_EQ(r.status, 1) << r.err;
    EXPECT_EQ(count_of(r.err, "dmmrec: cannot write " + (d / "k.trace") + ": File too large (trace not written)\n"),
              1u)
        << r.err;
    EXPECT_NE(r.err.find("record: no trace was reported: the status file"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("cannot be written either (File too large)"), std::string::npos) << r.err;
    EXPECT_EQ(count_of(r.err, "statically linked"), 0u) << r.err;
    EXPECT_TRUE(list_dir(d.path).empty());
}

TEST(RecorderFailure, RealFullDiskInAPrivateTmpfs)
{
    // A real ENOSPC: a full 8 KB tmpfs mounted in a private mount namespace
    // (needs unshare and the right to mount; SKIPPED otherwise).
    TmpDir d;
    std::string full = d / "full";
    ASSERT_EQ(mkdir(full.c_str(), 0755), 0);
    std::string unshare = find_program("unshare");
    if (unshare.empty())
        GTEST_SKIP() << "unshare not installed";
    std::string script = "mount -t tmpfs -o size=8k tmpfs '" + full + "' || exit 99\n"
                         "dd if=/dev/zero of='" + full + "/fill' bs=1k count=64 2>/dev/null\n"
                         "/bin/bash '" RECORD_SH "' -o '" + full + "/k.trace' -- '" REC_KNOWN "'\n"
                         "rc=$?\n"
                         "ls -A '" + full + "'\n"
                         "exit $rc\n";
    RunResult r = run({unshare, "-m", "/bin/sh", "-c", script}, {{"DMM_REC_LIB", DMMREC_LIB}}, d, "", false);
    if (r.status == 99 || r.err.find("unshare:") != std::string::npos)
        GTEST_SKIP() << "cannot mount a private tmpfs here: " << r.err;
    EXPECT_EQ(r.status, 1) << r.err;
    EXPECT_EQ(r.err, "record: cannot write " + full + "/k.trace: No space left on device (trace not written)\n");
    EXPECT_EQ(r.out, "fill\n") << "partial or temporary file left";
}

TEST(RecorderFailure, RecordScriptNamesAKillingSignal)
{
    TmpDir d;
    RunResult r = run({"/bin/bash", RECORD_SH, "-o", "k.trace", "--", "/bin/sh", "-c", "kill -KILL $$"},
                      {{"DMM_REC_LIB", DMMREC_LIB}}, d, "", false);
    EXPECT_EQ(r.status, 128 + SIGKILL);
    EXPECT_NE(r.err.find("record: no trace was written: the program was ended by signal 9"), std::string::npos)
        << r.err;
    EXPECT_EQ(count_of(r.err, "statically linked"), 0u) << r.err;
}

} // namespace
