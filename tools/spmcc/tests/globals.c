/* Globals that hold heap pointers: a global list head, a global heap
 * array, a global array of heap pointers (g_slots[i]->x: the element is
 * translated, and a call into the program ends the region because it may
 * change a global), and a stack struct holding a heap pointer. */
#include <stdio.h>
#include <stdlib.h>

struct item {
    int id;
    int hits;
    struct item *next;
};

struct item *g_head;
static int *g_tab;
static struct item *g_slots[8];
static int g_ntab = 64;

struct holder {
    struct item *it;
    int tag;
};

static void add(int id)
{
    struct item *it = malloc(sizeof *it);
    it->id = id;
    it->hits = 0;
    it->next = g_head;
    g_head = it;
}

static void bump(int id)
{
    for (struct item *p = g_head; p; p = p->next) {
        if (p->id == id)
            p->hits++;
    }
    g_tab[id % g_ntab] += id;
}

static void rotate(void)
{
    /* moves the head to the end: changes g_head */
    struct item *h = g_head;
    if (!h || !h->next)
        return;
    g_head = h->next;
    struct item *p = g_head;
    while (p->next)
        p = p->next;
    p->next = h;
    h->next = NULL;
}

int main(void)
{
    g_tab = calloc((size_t)g_ntab, sizeof *g_tab);
    for (int i = 0; i < 40; i++)
        add(i * 3);
    for (int i = 0; i < 8; i++) {
        g_slots[i] = malloc(sizeof(struct item));
        g_slots[i]->id = 100 + i;
        g_slots[i]->hits = i;
        g_slots[i]->next = g_head;
    }
    for (int r = 0; r < 200; r++) {
        bump((r * 7) % 120);
        int s = r % 8;
        g_slots[s]->hits += g_head->id;
        rotate();
        g_slots[s]->hits -= g_head->id / 2;
    }
    long sum = 0;
    for (struct item *p = g_head; p; p = p->next)
        sum += p->id * 1000 + p->hits;
    for (int i = 0; i < 8; i++)
        sum += g_slots[i]->hits * (i + 1);
    for (int i = 0; i < g_ntab; i++)
        sum += g_tab[i];
    struct holder h;
    h.it = g_slots[3];
    h.tag = h.it->id;
    h.it->hits = -5;
    printf("sum %ld tag %d hits %d\n", sum, h.tag, g_slots[3]->hits);
    for (int i = 0; i < 8; i++)
        free(g_slots[i]);
    while (g_head) {
        struct item *n = g_head->next;
        free(g_head);
        g_head = n;
    }
    free(g_tab);
    return 0;
}
