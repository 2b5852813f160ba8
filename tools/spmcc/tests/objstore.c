/* Loop-invariant pointers read from the heap beside stores into other
 * objects (docs/spm.md, "Loops"): a store through a variable that only ever
 * holds an object's start (set only from malloc/calloc/realloc, its address
 * never taken) lands in that variable's object, so it cannot change a
 * pointer read from another such variable's object.  `texts[t]` and
 * `b->name` are then translated once before the inner loop (pinned), not
 * once per iteration, also when the outer pointer was itself translated
 * before an enclosing loop.  The loops below where that would be WRONG must
 * keep translating each iteration, and print what the original prints:
 *   - the loop stores into the chain's own table (`tab[j] = other`);
 *   - it stores through a copy of the table (`alias[j] = ...`: alias is not
 *     set from an allocation);
 *   - it changes the table variable itself;
 *   - it calls a function of the program that changes the table;
 *   - it allocates and frees in the loop (frees: no chain is hoisted);
 *   - it allocates in the loop (the hoisted chain is pinned: paranoid mode
 *     evicts every unpinned unit at each malloc).
 * --unsafe-any-store (a test-only flag) treats every store as landing
 * elsewhere: the rewrite must then print something else (the first two). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct box {
    int id;
    char *name;
} box;

static char **table;          /* a global table: a call may change its rows */

static void swap_rows(int a, int b)
{
    char *t = table[a];
    table[a] = table[b];
    table[b] = t;
}

static unsigned long mix(unsigned long h, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        h = h * 131 + (unsigned char)s[i];
    return h;
}

int main(void)
{
    enum { ROWS = 6, LEN = 40 };
    char **texts = malloc(ROWS * sizeof *texts);
    for (int r = 0; r < ROWS; r++) {
        texts[r] = malloc(LEN + 1);
        for (int i = 0; i < LEN; i++)
            texts[r][i] = (char)((i + r * 7) % 3 ? 'a' + (i * 5 + r) % 26 : 'A' + (i + r) % 26);
        texts[r][LEN] = '\0';
    }
    unsigned long h = 7;
    /* hoisted: texts[t] once per t (texts itself once, before the t loop) */
    for (int t = 0; t < ROWS; t++) {
        char *low = malloc(LEN + 1);
        for (int i = 0; i <= LEN; i++)
            low[i] = (char)tolower((unsigned char)texts[t][i]);
        h = mix(h, low, LEN);
        free(low);
    }
    /* hoisted: b->name (a member chain) beside char stores into out */
    box *b = malloc(sizeof *b);
    b->id = 3;
    b->name = malloc(LEN + 1);
    memcpy(b->name, texts[2], LEN + 1);
    char *out = malloc(LEN + 1);
    for (int i = 0; i < LEN; i++)
        out[i] = b->name[LEN - 1 - i];
    out[LEN] = '\0';
    h = mix(h, out, LEN);

    /* WRONG to hoist: the loop stores into the chain's own table */
    char *other = malloc(LEN + 1);
    memset(other, 'z', LEN);
    other[LEN] = '\0';
    char **tab = malloc(ROWS * sizeof *tab);
    for (int r = 0; r < ROWS; r++)
        tab[r] = texts[r];
    int j = 4;
    for (int i = 0; i < LEN; i++) {
        out[i] = tab[j][i];
        if (i == 9)
            tab[j] = other;
    }
    h = mix(h, out, LEN);
    /* WRONG to hoist: a store through a copy of the table */
    char **alias = tab;
    j = 1;
    for (int i = 0; i < LEN; i++) {
        out[i] = tab[j][i];
        if (i == 17)
            alias[j] = texts[5];
    }
    h = mix(h, out, LEN);
    /* WRONG to hoist: the table variable itself changes */
    char **tab2 = malloc(ROWS * sizeof *tab2);
    for (int r = 0; r < ROWS; r++)
        tab2[r] = texts[ROWS - 1 - r];
    char **cur = tab;
    for (int i = 0; i < LEN; i++) {
        out[i] = cur[0][i];
        if (i == 25)
            cur = tab2;
    }
    h = mix(h, out, LEN);
    /* WRONG to hoist: a call of the program swaps the rows of a global table */
    table = malloc(ROWS * sizeof *table);
    for (int r = 0; r < ROWS; r++)
        table[r] = texts[r];
    for (int i = 0; i < LEN; i++) {
        out[i] = table[0][i];
        if (i % 8 == 7)
            swap_rows(0, i / 8 % ROWS);
    }
    h = mix(h, out, LEN);
    /* a loop that allocates and frees: stays per iteration */
    for (int i = 0; i < LEN; i++) {
        char *tmp = malloc(4);
        tmp[0] = texts[3][i];
        tmp[1] = '\0';
        out[i] = (char)toupper((unsigned char)tmp[0]);
        free(tmp);
    }
    h = mix(h, out, LEN);
    /* a loop that allocates (keeps what it allocates): the hoisted row is pinned */
    char **keep = malloc(LEN * sizeof *keep);
    for (int i = 0; i < LEN; i++) {
        keep[i] = malloc(2);
        out[i] = texts[1][i];
    }
    h = mix(h, out, LEN);
    for (int i = 0; i < LEN; i++)
        free(keep[i]);
    free(keep);
    printf("h=%lu out=%s\n", h, out);
    free(table);
    free(tab2);
    free(tab);
    free(other);
    free(out);
    free(b->name);
    free(b);
    for (int r = 0; r < ROWS; r++)
        free(texts[r]);
    free(texts);
    return 0;
}
