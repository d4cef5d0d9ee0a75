// SPDX-License-Identifier: MIT
/*
 * What a bounce path can carry between two processes that may not reach each other's
 * memory (no process_vm_readv/writev): the writer copies each message from its private
 * buffer into a ring both processes map, the reader copies it out into its own private
 * buffer, chunk by chunk, the two copies overlapping. No library: the ceiling a shm
 * transport without cross-memory attach could reach for 1 MiB Writes, against one copy
 * (-1: the writer copies straight into memory the reader maps, as a Write into
 * nd_alloc_memory does, or a cross-memory call at best).
 *   raw_bounce_bw [-s message] [-c chunk] [-r ring] [-n messages] [-1]
 * Prints MB/s (10^6 bytes a second) of messages delivered into the reader's buffer.
 */
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct ring_ctl {
    _Atomic uint64_t head;          /* bytes the writer has put in the ring */
    uint8_t pad1[56];
    _Atomic uint64_t tail;          /* bytes the reader has taken out */
    uint8_t pad2[56];
};

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Move @n messages of @msg bytes between @mine and the ring, @chunk bytes at a time: into
 * the ring (the writer, which waits for room) or out of it (the reader, which waits for
 * bytes). Each side publishes its own count and reads the other's. */
static void move_chunks(struct ring_ctl *ctl, uint8_t *ring, size_t ring_size, uint8_t *mine, size_t msg,
                        size_t chunk, long n, bool into_ring)
{
    _Atomic uint64_t *own = into_ring ? &ctl->head : &ctl->tail, *other = into_ring ? &ctl->tail : &ctl->head;
    uint64_t pos = 0;

    for (long i = 0; i < n; i++)
        for (size_t off = 0; off < msg; off += chunk) {
            size_t len = msg - off < chunk ? msg - off : chunk;

            if (into_ring) {
                while (pos + len - atomic_load_explicit(other, memory_order_acquire) > ring_size)
                    ;
                memcpy(ring + pos % ring_size, mine + off, len);
            } else {
                while (atomic_load_explicit(other, memory_order_acquire) - pos < len)
                    ;
                memcpy(mine + off, ring + pos % ring_size, len);
            }
            pos += len;
            atomic_store_explicit(own, pos, memory_order_release);
        }
}

static void writer(struct ring_ctl *ctl, uint8_t *ring, size_t ring_size, size_t msg, size_t chunk, long n)
{
    uint8_t *src = malloc(msg);

    memset(src, 0x5a, msg);
    move_chunks(ctl, ring, ring_size, src, msg, chunk, n, true);
    free(src);
}

static void reader(struct ring_ctl *ctl, uint8_t *ring, size_t ring_size, size_t msg, size_t chunk, long n)
{
    uint8_t *dst = malloc(msg);

    memset(dst, 0, msg);
    move_chunks(ctl, ring, ring_size, dst, msg, chunk, n, false);
    if (dst[msg - 1] != 0x5a)
        fprintf(stderr, "data not delivered\n");
    free(dst);
}

int main(int argc, char **argv)
{
    size_t msg = 1 << 20, chunk = 256 << 10, ring_size = 4 << 20;
    long n = 2000;
    bool one_copy = false;
    int opt;

    while ((opt = getopt(argc, argv, "s:c:r:n:1")) != -1) {
        switch (opt) {
        case 's': msg = strtoul(optarg, NULL, 0); break;
        case 'c': chunk = strtoul(optarg, NULL, 0); break;
        case 'r': ring_size = strtoul(optarg, NULL, 0); break;
        case 'n': n = strtol(optarg, NULL, 0); break;
        case '1': one_copy = true; break;
        default:
            fprintf(stderr, "usage: %s [-s message] [-c chunk] [-r ring] [-n messages] [-1]\n", argv[0]);
            return 2;
        }
    }
    if (!msg || !chunk || ring_size < chunk || ring_size % chunk) {
        fprintf(stderr, "the ring must hold whole chunks\n");
        return 2;
    }
    struct ring_ctl *ctl = mmap(NULL, sizeof(*ctl), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    size_t shared = one_copy ? msg : ring_size;
    uint8_t *ring = mmap(NULL, shared, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);

    if (ctl == MAP_FAILED || ring == MAP_FAILED)
        return 1;
    memset(ring, 0, shared);
    pid_t pid = fork();
    if (pid == 0) {
        if (one_copy) {
            /* The reader owns the destination: it only waits for the count. */
            while (atomic_load_explicit(&ctl->head, memory_order_acquire) < (uint64_t)n)
                ;
        } else {
            reader(ctl, ring, ring_size, msg, chunk, n);
        }
        _exit(0);
    }
    double t0 = now_s();
    if (one_copy) {
        uint8_t *src = malloc(msg);

        memset(src, 0x5a, msg);
        for (long i = 0; i < n; i++) {
            memcpy(ring, src, msg);
            atomic_store_explicit(&ctl->head, (uint64_t)i + 1, memory_order_release);
        }
        free(src);
    } else {
        writer(ctl, ring, ring_size, msg, chunk, n);
    }
    waitpid(pid, NULL, 0);
    double t = now_s() - t0;
    printf("%s %zu B messages, %zu B chunks, %zu B ring: %.0f MB/s\n", one_copy ? "one copy" : "bounce", msg, chunk,
           ring_size, (double)msg * (double)n / t / 1e6);
    return 0;
}
