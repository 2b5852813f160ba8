/*
 * bench/spm/stringsearch.c - the managed Boyer-Moore-Horspool search
 * (bench/workloads/programs/stringsearch.c): the vocabulary words, the
 * texts (grown with realloc, then trimmed), the per-search pattern copy and
 * skip table, and the case-folded text copies all live in global memory;
 * every byte and table entry is read or written through hm.h (p2s before,
 * s2p after).  Same random draws in the same order, so the same checksum.
 */
#include <ctype.h>

#include "prog_common.h"
#include "hm.h"

typedef struct search {
    hm_ref pat;  /* private copy, NUL-terminated */
    uint64_t len;
    hm_ref skip; /* 256 uint64_t entries */
} search;

static hm_ref search_new(hm_ref pattern, int fold)
{
    hm_ref s = HM_MALLOC(sizeof(search));
    uint64_t len = hm_strlen(pattern);
    hm_ref pat, skip;
    HM_SET(search, s, len, len);
    pat = HM_MALLOC(len + 1);
    HM_SET(search, s, pat, pat);
    for (uint64_t i = 0; i <= len; i++) {
        uint8_t c = HM_AGET(uint8_t, pattern, i);
        HM_ASET(uint8_t, pat, i, fold ? (uint8_t)tolower(c) : c);
    }
    skip = HM_MALLOC(256 * sizeof(uint64_t));
    HM_SET(search, s, skip, skip);
    for (int c = 0; c < 256; c++)
        HM_ASET(uint64_t, skip, c, len);
    for (uint64_t i = 0; i + 1 < len; i++)
        HM_ASET(uint64_t, skip, HM_AGET(uint8_t, pat, i), len - 1 - i);
    return s;
}

static void search_free(hm_ref s)
{
    HM_FREE(HM_GET(search, s, skip));
    HM_FREE(HM_GET(search, s, pat));
    HM_FREE(s);
}

/* memcmp(a + ia, b + ib, n) == 0, one heap byte at a time. */
static int hm_equal(hm_ref a, uint64_t ia, hm_ref b, uint64_t ib, uint64_t n)
{
    for (uint64_t k = 0; k < n; k++)
        if (HM_AGET(uint8_t, a, ia + k) != HM_AGET(uint8_t, b, ib + k))
            return 0;
    return 1;
}

/* Counts (possibly overlapping) matches; sums their positions into *possum. */
static uint64_t bmh_count(hm_ref s, hm_ref text, uint64_t n, uint64_t *possum)
{
    uint64_t count = 0, i = 0;
    uint64_t len = HM_GET(search, s, len);
    hm_ref pat = HM_GET(search, s, pat), skip = HM_GET(search, s, skip);
    if (len == 0 || len > n)
        return 0;
    while (i + len <= n) {
        uint8_t last = HM_AGET(uint8_t, text, i + len - 1);
        if (last == HM_AGET(uint8_t, pat, len - 1) && hm_equal(text, i, pat, 0, len - 1)) {
            count++;
            *possum += i;
        }
        i += HM_AGET(uint64_t, skip, last);
    }
    return count;
}

static uint64_t naive_count(hm_ref pat, hm_ref text, uint64_t n)
{
    uint64_t m = hm_strlen(pat), c = 0;
    for (uint64_t i = 0; m && i + m <= n; i++)
        c += hm_equal(text, i, pat, 0, m);
    return c;
}

static hm_ref random_word(prog_rng *r)
{
    static const char letters[] = "etaoinshrdlcumwfgypbvkjxqzETAOIN";
    size_t len = 2 + (size_t)rng_below(r, 9);
    hm_ref w = HM_MALLOC(len + 1);
    for (size_t i = 0; i < len; i++) {
        /* skewed towards common letters */
        uint64_t a = rng_below(r, sizeof letters - 1), b = rng_below(r, sizeof letters - 1);
        HM_ASET(uint8_t, w, i, (uint8_t)letters[a < b ? a : b]);
    }
    HM_ASET(uint8_t, w, len, (uint8_t)0);
    return w;
}

static int prog_main(int argc, char **argv)
{
    uint64_t npat = 400, ntext = 300, nvocab = 2000, words_per_text = 60, seed = 1;
    prog_opt opts[] = {
        {"-n", "--patterns", &npat, 1, 1u << 24, "patterns searched"},
        {"-t", "--texts", &ntext, 1, 1u << 24, "texts searched by every pattern"},
        {NULL, "--vocabulary", &nvocab, 1, 1u << 24, "distinct words"},
        {NULL, "--words", &words_per_text, 1, 1u << 20, "words per text (average)"},
        {"-s", "--seed", &seed, 0, UINT64_MAX, "random seed"},
    };
    prog_rng r;
    prog_sum s;
    hm_ref vocab, texts, tlen; /* hm_ref[nvocab], hm_ref[ntext], uint64_t[ntext] */
    uint64_t total = 0, folded = 0, possum = 0, copies = 0;

    prog_parse(argc, argv,
               "Boyer-Moore-Horspool (managed): per search a pattern copy and a skip table; text copies.", opts,
               sizeof opts / sizeof opts[0], NULL, NULL, 0);
    rng_seed(&r, seed);
    sum_init(&s);

    vocab = HM_MALLOC(nvocab * sizeof(hm_ref));
    for (uint64_t i = 0; i < nvocab; i++)
        HM_ASET(hm_ref, vocab, i, random_word(&r));

    texts = HM_MALLOC(ntext * sizeof(hm_ref));
    tlen = HM_MALLOC(ntext * sizeof(uint64_t));
    for (uint64_t t = 0; t < ntext; t++) {
        uint64_t cap = 16, len = 0;
        uint64_t nw = 1 + rng_below(&r, 2 * words_per_text);
        hm_ref buf = HM_MALLOC(cap);
        for (uint64_t w = 0; w < nw; w++) {
            hm_ref word = HM_AGET(hm_ref, vocab, rng_below(&r, nvocab));
            uint64_t wl = hm_strlen(word);
            while (len + wl + 2 > cap) {
                cap *= 2;
                buf = HM_REALLOC(buf, cap);
            }
            hm_copy(buf + len, word, wl);
            len += wl;
            HM_ASET(uint8_t, buf, len, (uint8_t)(w + 1 < nw ? ' ' : '.'));
            len++;
        }
        HM_ASET(uint8_t, buf, len, (uint8_t)0);
        HM_ASET(hm_ref, texts, t, HM_REALLOC(buf, len + 1)); /* trim */
        HM_ASET(uint64_t, tlen, t, len);
    }

    for (uint64_t p = 0; p < npat; p++) {
        hm_ref pattern, sr;
        uint64_t kind = rng_below(&r, 10), found = 0;
        int fold = p % 4 == 3;
        if (kind < 6) { /* a word of the vocabulary */
            hm_ref w = HM_AGET(hm_ref, vocab, rng_below(&r, nvocab));
            uint64_t wl = hm_strlen(w);
            pattern = HM_MALLOC(wl + 1);
            hm_copy(pattern, w, wl + 1);
        } else if (kind < 8) { /* two words across a space */
            hm_ref a = HM_AGET(hm_ref, vocab, rng_below(&r, nvocab));
            hm_ref b = HM_AGET(hm_ref, vocab, rng_below(&r, nvocab));
            uint64_t la = hm_strlen(a), lb = hm_strlen(b);
            pattern = HM_MALLOC(la + lb + 2);
            hm_copy(pattern, a, la);
            HM_ASET(uint8_t, pattern, la, (uint8_t)' ');
            hm_copy(pattern + la + 1, b, lb + 1);
        } else { /* most likely absent */
            pattern = random_word(&r);
        }
        sr = search_new(pattern, fold);
        for (uint64_t t = 0; t < ntext; t++) {
            uint64_t c, n = HM_AGET(uint64_t, tlen, t);
            hm_ref text = HM_AGET(hm_ref, texts, t);
            if (fold) {
                hm_ref low = HM_MALLOC(n + 1);
                for (uint64_t i = 0; i <= n; i++)
                    HM_ASET(uint8_t, low, i, (uint8_t)tolower(HM_AGET(uint8_t, text, i)));
                copies++;
                c = bmh_count(sr, low, n, &possum);
                if (p < 16 && c != naive_count(HM_GET(search, sr, pat), low, n))
                    prog_die(1, "self-check: pattern %" PRIu64 " text %" PRIu64 " count differs", p, t);
                HM_FREE(low);
            } else {
                c = bmh_count(sr, text, n, &possum);
                if (p < 16 && c != naive_count(HM_GET(search, sr, pat), text, n))
                    prog_die(1, "self-check: pattern %" PRIu64 " text %" PRIu64 " count differs", p, t);
            }
            found += c;
        }
        sum_u64(&s, found);
        total += found;
        folded += fold ? found : 0;
        search_free(sr);
        HM_FREE(pattern);
    }
    sum_u64(&s, possum);
    for (uint64_t t = 0; t < ntext; t++)
        HM_FREE(HM_AGET(hm_ref, texts, t));
    HM_FREE(tlen);
    HM_FREE(texts);
    for (uint64_t i = 0; i < nvocab; i++)
        HM_FREE(HM_AGET(hm_ref, vocab, i));
    HM_FREE(vocab);
    hm_info("stringsearch patterns=%" PRIu64 " texts=%" PRIu64 " vocabulary=%" PRIu64 " seed=%" PRIu64
            ": matches=%" PRIu64 " folded_matches=%" PRIu64 " text_copies=%" PRIu64,
            npat, ntext, nvocab, seed, total, folded, copies);
    hm_checksum(s.h);
    return 0;
}

int main(int argc, char **argv) { return hm_run(argc, argv, "stringsearch", prog_main); }
