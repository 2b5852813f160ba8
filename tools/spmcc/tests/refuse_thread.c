/* Threads: the rewritten program runs on one execution core. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
static void *work(void *arg)
{
    int *p = malloc(sizeof *p);
    *p = *(int *)arg;
    free(p);
    return NULL;
}
int main(void)
{
    pthread_t t;
    int x = 1;
    if (pthread_create(&t, NULL, work, &x) != 0) /* REFUSED: threads are not supported */
        return 1;
    pthread_join(t, NULL);
    puts("ok");
    return 0;
}
