/* A matrix as an array of row pointers (pointers stored in the heap),
 * a product reading two matrices and writing a third: three heap pointers
 * in one loop body, so the region pins them. */
#include <stdio.h>
#include <stdlib.h>

static double **alloc_matrix(int n)
{
    double **m = malloc((size_t)n * sizeof *m);
    for (int i = 0; i < n; i++)
        m[i] = calloc((size_t)n, sizeof(double));
    return m;
}

static void free_matrix(double **m, int n)
{
    for (int i = 0; i < n; i++)
        free(m[i]);
    free(m);
}

int main(void)
{
    int n = 24;
    double **a = alloc_matrix(n), **b = alloc_matrix(n), **c = alloc_matrix(n);
    for (int i = 0; i < n; i++) {
        double *ra = a[i];
        double *rb = b[i];
        for (int j = 0; j < n; j++) {
            ra[j] = (i * 3 + j) % 7 - 3;
            rb[j] = (i + 2 * j) % 5 - 2;
        }
    }
    for (int i = 0; i < n; i++) {
        double *ra = a[i];
        double *rc = c[i];
        for (int k = 0; k < n; k++) {
            double *rb = b[k];
            double aik = ra[k];
            for (int j = 0; j < n; j++)
                rc[j] += aik * rb[j];
        }
    }
    double trace = 0, sum = 0;
    for (int i = 0; i < n; i++) {
        double *rc = c[i];
        trace += rc[i];
        for (int j = 0; j < n; j++)
            sum += rc[j] * (j + 1);
    }
    printf("trace %.1f sum %.1f\n", trace, sum);
    free_matrix(a, n);
    free_matrix(b, n);
    free_matrix(c, n);
    return 0;
}
