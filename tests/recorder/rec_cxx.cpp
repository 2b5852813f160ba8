// tests/recorder/rec_cxx.cpp - a C++ program whose new/delete must reach the
// recorder through malloc (libstdc++'s operator new calls malloc, its
// aligned operator new calls aligned_alloc).
//
// Markers the test looks for: new int[1234] (a 4936-byte MALLOC that is
// freed), one 64-aligned object of 192 bytes (an ALIGNED op, alignment 64),
// and a std::map of 1000 nodes.  Prints "sum=<n>" so the work is not
// optimised away.
#include <cstdio>
#include <map>
#include <memory>
#include <new>
#include <string>
#include <vector>

struct alignas(64) Vec {
    float v[48];
};

// Pointers stored here escape, so the compiler cannot elide a new/delete
// pair (C++14 allows it, and GCC does so at -O1).
void *volatile sink;

int main()
{
    long sum = 0;
    {
        std::vector<int> v;
        for (int i = 0; i < 100000; i++)
            v.push_back(i);
        for (int x : v)
            sum += x & 1;
    }
    {
        std::map<int, std::string> m;
        for (int i = 0; i < 1000; i++)
            m[i] = std::string(40 + i % 13, 'x');
        for (auto &kv : m)
            sum += (long)kv.second.size();
        m.erase(m.begin(), m.find(500));
        sum += (long)m.size();
    }
    {
        int *a = new int[1234];
        sink = a;
        a[1233] = 7;
        sum += a[1233];
        delete[] a;
    }
    {
        auto p = std::make_unique<Vec>(); // aligned new (alignof 64 > 16)
        sink = p.get();
        p->v[0] = 1.0f;
        sum += (long)p->v[0];
    }
    {
        std::vector<std::shared_ptr<std::string>> s;
        for (int i = 0; i < 500; i++)
            s.push_back(std::make_shared<std::string>(100, 'y'));
        s.resize(100);
        sum += (long)s.size();
    }
    std::printf("sum=%ld\n", sum);
    return 0;
}
