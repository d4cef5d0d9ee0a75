// SPDX-License-Identifier: MIT
/*
 * Registered ordinary memory made of transparent huge pages, in the background.
 *
 * A same-host peer reaches ordinary (private) memory with process_vm_writev/readv, which pin
 * the target's pages one by one in every call: on 4 KiB pages the pinning costs about as
 * much as the copy (docs/design-shm.md). With the registered range's whole 2 MiB blocks
 * collapsed into huge pages it is one pin per 2 MiB. Registered memory is resident in every
 * RDMA stack (verbs pins it), so a huge page costs no memory a registration would not.
 *
 * MADV_COLLAPSE is used alone, not MADV_HUGEPAGE: it honours an application's
 * MADV_NOHUGEPAGE, leaves the VMA's flags (and the number of VMAs) as they are, and works
 * whatever the system's THP setting. It copies what is resident, 0.6 ms a block here and
 * far more when the kernel must compact memory first: too long for Register to wait, so a
 * thread of the adapter does it after Register has returned, a block at a time.
 * Peers' transfers meanwhile work on whatever pages there are. A failure (file-backed
 * memory, no huge page free, a kernel before 6.1) leaves the pages as they were. A block
 * with no page resident is not populated; one with any page resident becomes a whole
 * huge page, so a sparse region grows towards its size: what verbs would pin anyway.
 */
#include "mem_int.h"
#include "env.h"
#include "log.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25    /* Linux 6.1; older headers lack it */
#endif
#define HUGE_PAGE_BYTES ((uintptr_t)2 << 20)

struct huge_job {
    uintptr_t start, end;
    const void *owner;          /* the MR: Deregister withdraws its jobs */
};

struct nd_huge_worker {
    pthread_mutex_t lock;
    pthread_cond_t wake;
    pthread_t thread;
    pid_t pid;                  /* the thread exists only in this process (not in a fork child) */
    bool stop;
    const void *busy_owner;     /* the job being worked on; NULL once withdrawn */
    struct huge_job *jobs;      /* FIFO */
    uint32_t njobs, cap;
};

/* Take the first job; false when told to stop. */
static bool next_job(struct nd_huge_worker *w, struct huge_job *job)
{
    pthread_mutex_lock(&w->lock);
    while (!w->njobs && !w->stop)
        pthread_cond_wait(&w->wake, &w->lock);
    bool go = !w->stop;
    if (go) {
        *job = w->jobs[0];
        memmove(w->jobs, w->jobs + 1, --w->njobs * sizeof(*w->jobs));
        w->busy_owner = job->owner;
    }
    pthread_mutex_unlock(&w->lock);
    return go;
}

/* Still wanted? Checked between blocks, so Deregister and adapter close wait one block at most. */
static bool job_wanted(struct nd_huge_worker *w, const void *owner)
{
    pthread_mutex_lock(&w->lock);
    bool wanted = !w->stop && w->busy_owner == owner;
    pthread_mutex_unlock(&w->lock);
    return wanted;
}

static void *huge_main(void *arg)
{
    struct nd_huge_worker *w = arg;
    struct huge_job job;

    while (next_job(w, &job)) {
        uint64_t blocks = 0, failed = 0;
        int first_errno = 0;

        /* Every block is tried: one that fails (EINVAL for a block with no page resident,
         * which is not populated; file-backed or MADV_NOHUGEPAGE memory) says nothing of
         * the next. */
        for (uintptr_t p = job.start; p < job.end && job_wanted(w, job.owner); p += HUGE_PAGE_BYTES) {
            blocks++;
            if (madvise((void *)p, HUGE_PAGE_BYTES, MADV_COLLAPSE) != 0 && !failed++)
                first_errno = errno;
        }
        if (failed) {
            errno = first_errno;
            nd_log(ND_LOG_DEBUG, ND_SUB_MEM, "huge pages at %p: %llu of %llu blocks left as they were (first: %m)",
                   (void *)job.start, (unsigned long long)failed, (unsigned long long)blocks);
        }
    }
    return NULL;
}

static struct nd_huge_worker *worker_start(void)
{
    struct nd_huge_worker *w = calloc(1, sizeof(*w));

    if (!w)
        return NULL;
    pthread_mutex_init(&w->lock, NULL);
    pthread_cond_init(&w->wake, NULL);
    w->pid = getpid();
    if (nd_thread_start(&w->thread, huge_main, w, "nd-hugepages")) {
        pthread_cond_destroy(&w->wake);
        pthread_mutex_destroy(&w->lock);
        free(w);
        return NULL;
    }
    return w;
}

bool nd_huge_collapse_later(struct nd_adapter *a, const void *owner, const void *buf, size_t len)
{
    uintptr_t start = ((uintptr_t)buf + HUGE_PAGE_BYTES - 1) & ~(HUGE_PAGE_BYTES - 1);
    uintptr_t end = ((uintptr_t)buf + len) & ~(HUGE_PAGE_BYTES - 1);
    struct nd_huge_worker *w;

    /* Register has checked that [buf, buf+len) is mapped: it does not wrap. */
    if (end <= start || strcmp(nd_env(ND_KNOB_MR_HUGE_PAGES), "0") == 0)
        return false;
    pthread_mutex_lock(&a->lock);
    if (!a->huge_worker)
        a->huge_worker = worker_start();
    w = a->huge_worker;
    pthread_mutex_unlock(&a->lock);
    if (!w || w->pid != getpid())
        return false;
    pthread_mutex_lock(&w->lock);
    struct huge_job *jobs = nd_with_room(w->jobs, &w->cap, w->njobs, sizeof(*jobs));
    if (jobs) {
        w->jobs = jobs;
        jobs[w->njobs++] = (struct huge_job){ start, end, owner };
        pthread_cond_signal(&w->wake);
    }
    pthread_mutex_unlock(&w->lock);
    return jobs != NULL;
}

void nd_huge_withdraw(struct nd_adapter *a, const void *owner)
{
    pthread_mutex_lock(&a->lock);
    struct nd_huge_worker *w = a->huge_worker;
    pthread_mutex_unlock(&a->lock);
    if (!w || w->pid != getpid())
        return;
    pthread_mutex_lock(&w->lock);
    uint32_t kept = 0;
    for (uint32_t i = 0; i < w->njobs; i++)
        if (w->jobs[i].owner != owner)
            w->jobs[kept++] = w->jobs[i];
    w->njobs = kept;
    if (w->busy_owner == owner)
        w->busy_owner = NULL;
    pthread_mutex_unlock(&w->lock);
}

void nd_huge_stop(struct nd_adapter *a)
{
    struct nd_huge_worker *w = a->huge_worker;

    if (!w)
        return;
    a->huge_worker = NULL;
    if (w->pid != getpid()) {
        free(w->jobs);      /* a fork child: no thread to stop, and the lock's state unknown */
        free(w);
        return;
    }
    pthread_mutex_lock(&w->lock);
    w->stop = true;
    pthread_cond_signal(&w->wake);
    pthread_mutex_unlock(&w->lock);
    pthread_join(w->thread, NULL);
    pthread_cond_destroy(&w->wake);
    pthread_mutex_destroy(&w->lock);
    free(w->jobs);
    free(w);
}
