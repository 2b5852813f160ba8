/* Pins only where a translation is used after a call that may move data
 * (docs/spm.md, "Pins"): in a run of statements, a translation whose last
 * use comes before the next translation, allocation or call into the
 * program is a plain p2s/p2s_ro; one used again after such a call must stay
 * pinned.  Each function below has one of each; the paranoid run (every
 * p2s, pin and malloc evicts every unpinned unit and poisons its bytes)
 * reads poison wherever a needed pin is missing, and the test run with
 * --unsafe-first-use (a translation taken as used only in its first
 * statement) must fail for that reason. */
#include <stdio.h>
#include <stdlib.h>

typedef struct cell {
    long a, b, c;
    struct cell *next, *prev;
} cell;

static long sum;

static cell *make(long v)
{
    cell *n = malloc(sizeof *n);
    n->a = v;           /* the run's only translation: no pin */
    n->b = v * 3;
    n->c = v ^ 5;
    n->next = n->prev = NULL;
    return n;
}

/* x's last use precedes y's translation: both plain */
static void two_dead(cell *x, cell *y, long v)
{
    x->a += v;
    x->b ^= v;
    y->b += v * 2;      /* translates y: x is no longer used */
    y->c = v;
}

/* the wrong case: x used again after another pointer's translation */
static void reuse_after_other(cell *x, cell *y, long v)
{
    x->a = v;
    y->b = v + 1;       /* translates y: x's local address dies here */
    x->c = y->b + x->a; /* so x must still be pinned */
}

/* the wrong case with an allocation in between */
static cell *reuse_after_malloc(cell *x, long v)
{
    x->b = v;
    cell *n = make(v + 7);   /* malloc + translations: x's local address dies */
    x->next = n;             /* x must still be pinned */
    x->c = x->b + 1;
    return n;
}

/* a chain: the inner pointer is read only to translate the outer one */
static void chain_only(cell *x, long v)
{
    x->next->a += v;         /* x: plain, read before x->next's translation */
    x->next->c = x->next->a; /* the chain's own translation serves this */
}

/* a chain whose inner pointer is used again after it: pinned */
static void chain_then_inner(cell *x, long v)
{
    x->next->b += v;
    x->a = x->next->b - 1;
}

/* conditions: x read only to translate x->next (plain), then x read in the
 * condition too (the wrong case: pinned) */
static int cond_chain(cell *x)
{
    if (x->next->a > x->next->b)
        return 1;
    return 0;
}

static int cond_chain_inner(cell *x)
{
    if (x->next->a > x->b)
        return 1;
    return 0;
}

/* a function of the program that allocates and translates: a call of it
 * may move data */
static cell *kept;
static long weigh(long v, const cell *c)
{
    cell *n = make(v);
    n->next = kept;
    kept = n;
    return v + (c != NULL); /* c itself is not translated here */
}

/* x is read only in the arguments of a call that moves data (read before
 * the call): no pin */
static long args_only(cell *x)
{
    return weigh(x->a, x);
}

/* the wrong case: x is also stored through after the call returns */
static void args_then_store(cell *x)
{
    x->c = weigh(x->a, x);
}

int main(void)
{
    cell *head = make(1), *t = head, *a1 = make(5);
    for (long i = 2; i < 400; i++)
        t = reuse_after_malloc(t, i);
    for (int r = 0; r < 5; r++) {
        for (cell *p = head; p && p->next; p = p->next) {
            two_dead(p, p->next, r);
            reuse_after_other(p->next, p, r + 2);
            chain_only(p, r);
            chain_then_inner(p, r + 1);
            sum += args_only(p);
            sum += cond_chain(p) + 2 * cond_chain_inner(p);
            args_then_store(p);
        }
    }
    /* t is pinned by nobody here (inside the loops above, the loop's own
     * pin of p would keep the unit resident whatever args_then_store does) */
    args_then_store(t);
    sum += t->c;
    /* a1 and a2 lie in different units and nobody pins a1 here: x's local
     * address must survive x->next's translation in cond_chain_inner */
    cell *a2 = make(9);
    a1->next = a2;
    for (int k = 0; k < 3; k++)
        sum += 3 * cond_chain_inner(a1) + 5 * cond_chain(a1);
    free(a2);
    free(a1);
    for (cell *p = head; p; p = p->next)
        sum += p->a * 7 + p->b * 3 + p->c;
    printf("sum %ld\n", sum);
    while (head) {
        cell *n = head->next;
        free(head);
        head = n;
    }
    while (kept) {
        cell *n = kept->next;
        free(kept);
        kept = n;
    }
    return 0;
}
