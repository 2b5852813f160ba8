/* Pointer chasing through a singly linked list: a struct with a pointer
 * field, insertion at the head and in order, a walk, removal and free. */
#include <stdio.h>
#include <stdlib.h>

struct node {
    int key;
    long weight;
    struct node *next;
};

static struct node *push(struct node *head, int key)
{
    struct node *n = malloc(sizeof *n);
    if (!n)
        return head;
    n->key = key;
    n->weight = (long)key * 3;
    n->next = head;
    return n;
}

static struct node *insert_sorted(struct node *head, int key)
{
    struct node *n = malloc(sizeof(struct node));
    n->key = key;
    n->weight = -key;
    n->next = NULL;
    if (!head || head->key >= key) {
        n->next = head;
        return n;
    }
    struct node *p = head;
    for (;;) {
        struct node *nx = p->next;
        if (!nx || nx->key >= key)
            break;
        p = nx;
    }
    n->next = p->next;
    p->next = n;
    return head;
}

static long sum(const struct node *p)
{
    long s = 0;
    while (p) {
        s += p->key * 7 + p->weight;
        p = p->next;
    }
    return s;
}

static struct node *drop_odd(struct node *head)
{
    while (head && head->key % 2) {
        struct node *d = head;
        head = head->next;
        free(d);
    }
    for (struct node *p = head; p; p = p->next) {
        struct node *q = p->next;
        while (q && q->key % 2) {
            p->next = q->next;
            free(q);
            q = p->next;
        }
    }
    return head;
}

int main(void)
{
    struct node *a = NULL, *b = NULL;
    unsigned x = 12345;
    for (int i = 0; i < 400; i++) {
        x = x * 1103515245u + 12345u;
        a = push(a, (int)(x % 1000));
        b = insert_sorted(b, (int)(x % 997));
    }
    printf("sum a %ld b %ld\n", sum(a), sum(b));
    a = drop_odd(a);
    b = drop_odd(b);
    printf("after drop a %ld b %ld\n", sum(a), sum(b));
    int prev = -1, sorted = 1;
    for (struct node *p = b; p; p = p->next) {
        if (p->key < prev)
            sorted = 0;
        prev = p->key;
    }
    printf("sorted %d\n", sorted);
    while (a) {
        struct node *n = a->next;
        free(a);
        a = n;
    }
    while (b) {
        struct node *n = b->next;
        free(b);
        b = n;
    }
    return 0;
}
