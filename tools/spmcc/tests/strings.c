/* Strings on the heap: C library calls with heap arguments (strcpy, strlen,
 * strcmp, printf %s get the local address), strchr returning a pointer into
 * a heap string (s2p turns it back into a global address), the address of
 * a heap field stored in another heap object (&p->f: s2p), and member
 * arrays inside heap structs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct word {
    char text[24];
    int len;
    int *lenp;   /* points at another word's len: an interior heap address */
};

static const char *const names[] = {"alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf"};

int main(void)
{
    int n = 7;
    struct word **w = malloc((size_t)n * sizeof *w);
    for (int i = 0; i < n; i++) {
        struct word *x = malloc(sizeof *x);
        strcpy(x->text, names[i]);
        x->len = (int)strlen(x->text);
        x->lenp = NULL;
        w[i] = x;
    }
    for (int i = 0; i < n; i++) {
        struct word *x = w[i];
        struct word *y = w[(i + 1) % n];
        x->lenp = &y->len;
    }
    long total = 0;
    for (int i = 0; i < n; i++) {
        struct word *x = w[i];
        int *lp = x->lenp;
        total += *lp * (i + 1);
    }
    char *buf = malloc(64);
    strcpy(buf, "find the first e in here");
    char *e = strchr(buf, 'e');
    long off = e ? e - buf : -1;
    *e = 'E';
    char *none = strchr(buf, 'z');
    printf("total %ld off %ld none %d buf %s\n", total, off, none == NULL, buf);
    int cmp = 0;
    for (int i = 0; i + 1 < n; i++) {
        struct word *x = w[i];
        struct word *y = w[i + 1];
        cmp += strcmp(x->text, y->text) < 0;
    }
    struct word *first = w[0];
    printf("sorted pairs %d first %s len %d\n", cmp, first->text, first->len);
    for (int i = 0; i < n; i++)
        free(w[i]);
    free(w);
    free(buf);
    return 0;
}
