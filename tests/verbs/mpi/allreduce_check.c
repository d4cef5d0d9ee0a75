// SPDX-License-Identifier: MIT
/* Every rank adds rank + 1 with MPI_Allreduce; each checks the sum and says where it ran. */
#include <mpi.h>
#include <stdio.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    int rank, size;
    long mine, sum, want;
    char host[256] = "?";

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    mine = rank + 1;
    want = (long)size * (size + 1) / 2;
    MPI_Allreduce(&mine, &sum, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    gethostname(host, sizeof(host) - 1);
    printf("rank %d of %d on %s: allreduce %ld, expected %ld\n", rank, size, host, sum, want);
    MPI_Finalize();
    return sum == want ? 0 : 1;
}
