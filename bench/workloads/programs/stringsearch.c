/*
 * bench/workloads/programs/stringsearch.c - Boyer-Moore-Horspool search of
 * many patterns in many texts (seed 000's stringsearch, after MiBench's
 * office/stringsearch).
 *
 *   stringsearch -n 400 [--texts 300] [--vocabulary 2000] [--seed S]
 *
 * Allocation shape:
 *   - a vocabulary of random words (one malloc each);
 *   - texts built word by word in a buffer grown with realloc (as a line
 *     reader does), then trimmed to size;
 *   - per pattern (search): a copy of the pattern and its 256-entry skip
 *     table, freed when the search is done;
 *   - every 4th pattern is searched case-insensitively: a lower-cased copy
 *     of the pattern and of each text it scans (text copies), freed after.
 * Checks the first patterns against a naive search.  Prints match counts.
 */
#include <ctype.h>

#include "prog_common.h"

typedef struct search {
    char *pat;     /* private copy */
    size_t len;
    size_t *skip;  /* 256 entries */
} search;

static search *search_new(const char *pattern, int fold)
{
    search *s = xmalloc(sizeof *s);
    s->len = strlen(pattern);
    s->pat = xmalloc(s->len + 1);
    for (size_t i = 0; i <= s->len; i++)
        s->pat[i] = fold ? (char)tolower((unsigned char)pattern[i]) : pattern[i];
    s->skip = xmalloc(256 * sizeof *s->skip);
    for (int c = 0; c < 256; c++)
        s->skip[c] = s->len;
    for (size_t i = 0; i + 1 < s->len; i++)
        s->skip[(unsigned char)s->pat[i]] = s->len - 1 - i;
    return s;
}

static void search_free(search *s)
{
    free(s->skip);
    free(s->pat);
    free(s);
}

/* Counts (possibly overlapping) matches; sums their positions into *possum. */
static uint64_t bmh_count(const search *s, const char *text, size_t n, uint64_t *possum)
{
    uint64_t count = 0;
    size_t i = 0;
    if (s->len == 0 || s->len > n)
        return 0;
    while (i + s->len <= n) {
        unsigned char last = (unsigned char)text[i + s->len - 1];
        if (last == (unsigned char)s->pat[s->len - 1] && memcmp(text + i, s->pat, s->len - 1) == 0) {
            count++;
            *possum += i;
        }
        i += s->skip[last];
    }
    return count;
}

static uint64_t naive_count(const char *pat, const char *text, size_t n)
{
    size_t m = strlen(pat);
    uint64_t c = 0;
    for (size_t i = 0; m && i + m <= n; i++)
        c += memcmp(text + i, pat, m) == 0;
    return c;
}

static char *random_word(prog_rng *r)
{
    static const char letters[] = "etaoinshrdlcumwfgypbvkjxqzETAOIN";
    size_t len = 2 + (size_t)rng_below(r, 9);
    char *w = xmalloc(len + 1);
    for (size_t i = 0; i < len; i++) {
        /* skewed towards common letters */
        uint64_t a = rng_below(r, sizeof letters - 1), b = rng_below(r, sizeof letters - 1);
        w[i] = letters[a < b ? a : b];
    }
    w[len] = '\0';
    return w;
}

int main(int argc, char **argv)
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
    char **vocab, **texts;
    size_t *tlen;
    uint64_t total = 0, folded = 0, possum = 0, copies = 0;

    prog_parse(argc, argv, "Boyer-Moore-Horspool: per search a pattern copy and a skip table; text copies.", opts,
               sizeof opts / sizeof opts[0], NULL, NULL, 0);
    rng_seed(&r, seed);
    sum_init(&s);

    vocab = xmalloc(nvocab * sizeof *vocab);
    for (uint64_t i = 0; i < nvocab; i++)
        vocab[i] = random_word(&r);

    texts = xmalloc(ntext * sizeof *texts);
    tlen = xmalloc(ntext * sizeof *tlen);
    for (uint64_t t = 0; t < ntext; t++) {
        size_t cap = 16, len = 0;
        uint64_t nw = 1 + rng_below(&r, 2 * words_per_text);
        char *buf = xmalloc(cap);
        for (uint64_t w = 0; w < nw; w++) {
            const char *word = vocab[rng_below(&r, nvocab)];
            size_t wl = strlen(word);
            while (len + wl + 2 > cap) {
                cap *= 2;
                buf = xrealloc(buf, cap);
            }
            memcpy(buf + len, word, wl);
            len += wl;
            buf[len++] = w + 1 < nw ? ' ' : '.';
        }
        buf[len] = '\0';
        texts[t] = xrealloc(buf, len + 1); /* trim */
        tlen[t] = len;
    }

    for (uint64_t p = 0; p < npat; p++) {
        char *pattern;
        uint64_t kind = rng_below(&r, 10), found = 0;
        int fold = p % 4 == 3;
        search *sr;
        if (kind < 6) { /* a word of the vocabulary */
            const char *w = vocab[rng_below(&r, nvocab)];
            pattern = xmalloc(strlen(w) + 1);
            strcpy(pattern, w);
        } else if (kind < 8) { /* two words across a space */
            const char *a = vocab[rng_below(&r, nvocab)], *b = vocab[rng_below(&r, nvocab)];
            size_t la = strlen(a), lb = strlen(b);
            pattern = xmalloc(la + lb + 2);
            memcpy(pattern, a, la);
            pattern[la] = ' ';
            memcpy(pattern + la + 1, b, lb + 1);
        } else { /* most likely absent */
            pattern = random_word(&r);
        }
        sr = search_new(pattern, fold);
        for (uint64_t t = 0; t < ntext; t++) {
            uint64_t c;
            if (fold) {
                char *low = xmalloc(tlen[t] + 1);
                for (size_t i = 0; i <= tlen[t]; i++)
                    low[i] = (char)tolower((unsigned char)texts[t][i]);
                copies++;
                c = bmh_count(sr, low, tlen[t], &possum);
                if (p < 16 && c != naive_count(sr->pat, low, tlen[t]))
                    prog_die(1, "self-check: pattern %" PRIu64 " text %" PRIu64 " count differs", p, t);
                free(low);
            } else {
                c = bmh_count(sr, texts[t], tlen[t], &possum);
                if (p < 16 && c != naive_count(sr->pat, texts[t], tlen[t]))
                    prog_die(1, "self-check: pattern %" PRIu64 " text %" PRIu64 " count differs", p, t);
            }
            found += c;
        }
        sum_u64(&s, found);
        total += found;
        folded += fold ? found : 0;
        search_free(sr);
        free(pattern);
    }
    sum_u64(&s, possum);
    for (uint64_t t = 0; t < ntext; t++)
        free(texts[t]);
    free(tlen);
    free(texts);
    for (uint64_t i = 0; i < nvocab; i++)
        free(vocab[i]);
    free(vocab);
    printf("stringsearch patterns=%" PRIu64 " texts=%" PRIu64 " vocabulary=%" PRIu64 " seed=%" PRIu64
           ": matches=%" PRIu64 " folded_matches=%" PRIu64 " text_copies=%" PRIu64 "\n",
           npat, ntext, nvocab, seed, total, folded, copies);
    printf("checksum=%016" PRIx64 "\n", s.h);
    return 0;
}
