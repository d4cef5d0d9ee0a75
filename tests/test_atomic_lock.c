// SPDX-License-Identifier: MIT
/*
 * The atomic locks that serialise remote atomics (core/atomic.c). A lock whose holder died
 * holding it (a peer killed between its cross-memory read and write) is taken over; one a
 * live process keeps fails the next taker with -EDEADLK after its wait, not a hang; the
 * locks of other addresses stay free meanwhile; the result of each operation is as verbs
 * defines it. The page is shared with the children through fork, as a peer maps it.
 */
#include "core/atomic.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#define CHECK(c) do { if (!(c)) { fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, #c); exit(1); } } while (0)

static pid_t child_holding(struct nd_atomic_page *page, uint64_t addr, int ready)
{
    pid_t pid = fork();
    _Atomic uint32_t *held;

    CHECK(pid >= 0);
    if (pid)
        return pid;
    if (nd_atomic_lock(page, addr, &held) != 0)
        _exit(1);
    if (write(ready, "h", 1) != 1)
        _exit(1);
    pause();                        /* holds it until killed */
    _exit(0);
}

int main(void)
{
    struct nd_atomic_page *page = nd_atomic_own_page();
    _Atomic uint32_t *held;
    uint64_t word = 5, old;
    int p[2], st;
    char c;

    CHECK(page && pipe(p) == 0);
    /* The results. */
    CHECK(nd_atomic_result(ND_REQUEST_TYPE_FETCH_ADD, 5, 3, 0) == 8);
    CHECK(nd_atomic_result(ND_REQUEST_TYPE_CMP_SWAP, 5, 5, 9) == 9);
    CHECK(nd_atomic_result(ND_REQUEST_TYPE_CMP_SWAP, 5, 4, 9) == 5);
    CHECK(nd_atomic_local(ND_REQUEST_TYPE_FETCH_ADD, &word, 2, 0, &old) == 0 && old == 5 && word == 7);

    /* A holder killed with the lock: taken over. */
    pid_t pid = child_holding(page, 0x1000, p[1]);
    CHECK(read(p[0], &c, 1) == 1);
    CHECK(kill(pid, SIGKILL) == 0 && waitpid(pid, &st, 0) == pid);
    CHECK(nd_atomic_lock(page, 0x1000, &held) == 0);
    nd_atomic_unlock(held);

    /* A live holder: another address is free; the same one fails after the wait. */
    pid = child_holding(page, 0x2000, p[1]);
    CHECK(read(p[0], &c, 1) == 1);
    CHECK(nd_atomic_lock(page, 0x2000 + 64 * ND_ATOMIC_LOCKS + 64, &held) == 0);
    nd_atomic_unlock(held);
    CHECK(nd_atomic_lock(page, 0x2000, &held) == -EDEADLK);
    CHECK(kill(pid, SIGKILL) == 0 && waitpid(pid, &st, 0) == pid);
    CHECK(nd_atomic_local(ND_REQUEST_TYPE_CMP_SWAP, &word, 7, 1, &old) == 0 && old == 7 && word == 1);
    puts("atomic locks: taken over from the dead, refused from the living, results as verbs says");
    return 0;
}
