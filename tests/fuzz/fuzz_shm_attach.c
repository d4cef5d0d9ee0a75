// SPDX-License-Identifier: MIT
/*
 * libFuzzer target: what a same-host peer hands us when it connects. Part one sends the
 * input's first bytes as one connection message, with or without descriptors attached
 * (which nobody should take), through a SOCK_SEQPACKET pair to shm_recv. Part two attaches
 * a queue pair to a peer (this process) whose geometry (ring size, SGEs, slot size, arm
 * slots, SRQ) and region offset come from the input, whose region memfd is as long as the
 * geometry needs give or take what the input says, sealed or not, and holds the input's
 * bytes, and whose descriptor names (numbers, inodes) the input may corrupt. Whatever it
 * is: no crash, no descriptor leaked, and an attached queue pair closes cleanly.
 */
#include <netdirect/netdirect.h>
#include "core/core.h"
#include "core/qp_int.h"
#include "core/srq_int.h"
#include "transports/shm/shm.h"
#include "fuzz_input.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

static nd_adapter *adapter;
static nd_port *port;
static nd_cq *cq;

static int open_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    int n = 0;

    if (!d)
        abort();
    while (readdir(d))
        n++;
    closedir(d);
    return n;
}

static void setup(void)
{
    struct sockaddr_in lo = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };

    if (nd_open_adapter_by_address((struct sockaddr *)&lo, sizeof(lo), &adapter) != ND_SUCCESS ||
        nd_port_create(&port) != ND_SUCCESS ||
        nd_adapter_create_completion_queue(adapter, port, 64, 0, 0, &cq) != ND_SUCCESS ||
        nd_adapter_ro_fd(adapter) < 0)      /* opened once and kept: not a leak per input */
        abort();
    /* The arena's first chunk is kept for the next queue pair: make it now, not per input. */
    nd_qp *qp;
    if (nd_adapter_create_queue_pair(adapter, cq, cq, NULL, 4, 4, 1, 1, 0, &qp) != ND_SUCCESS)
        abort();
    nd_qp_close(qp);
}

/* Part one: a raw connection message, 0 to 6 descriptors attached. */
static void raw_message(struct input *in)
{
    int sv[2], nfds = (int)(take(in, 1) % 7), fds[6];
    size_t len = take(in, 2) % 2048;
    union { char buf[CMSG_SPACE(sizeof(int) * 6)]; struct cmsghdr align; } cbuf;
    struct nd_cm_msg m;

    if (len > in->left)
        len = in->left;
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
        abort();
    struct iovec iov = { (void *)in->p, len };
    struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
    if (nfds) {
        for (int i = 0; i < nfds; i++)
            fds[i] = eventfd(0, EFD_CLOEXEC);
        mh.msg_control = cbuf.buf;
        mh.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds);
        struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
        memcpy(CMSG_DATA(c), fds, sizeof(int) * (size_t)nfds);
    }
    if (sendmsg(sv[0], &mh, 0) >= 0)
        shm_recv(sv[1], &m);
    in->p += len;
    in->left -= len;
    for (int i = 0; i < nfds; i++)
        close(fds[i]);
    close(sv[0]);
    close(sv[1]);
}

/* A memfd of about @size bytes holding the input's bytes; sealed unless the input says not. */
static int peer_region(struct input *in, size_t size)
{
    uint32_t how = take(in, 1);
    int delta = (int)(take(in, 2) % 8192) - 4096;
    size_t len = how & 2 ? (size_t)((ssize_t)size + delta > 0 ? (ssize_t)size + delta : 0) : size;

    if (len > (64u << 20))
        len = 64u << 20;
    int fd = how & 1 ? memfd_create("loose", MFD_CLOEXEC) : nd_memfd_sealed("peer", len ? len : 4096);
    if (fd < 0)
        abort();
    if ((how & 1) && ftruncate(fd, (off_t)len) < 0)
        abort();
    size_t n = in->left < len ? in->left : len;
    if (n > 65536)
        n = 65536;
    if (n && pwrite(fd, in->p, n, 0) < 0)
        abort();
    in->p += n;
    in->left -= n;
    return fd;
}

/* How a peer names @fd: truly, or with the number or the inode the input makes up. */
static void name(struct input *in, int fd, struct nd_fd_ref *ref)
{
    uint32_t how = take(in, 1);

    if (!nd_fd_ref_of(fd, ref))
        abort();
    if (how & 1)
        ref->fd = (int32_t)(take(in, 1) % 32);
    if (how & 2)
        ref->ino ^= take(in, 1);
}

/* Part two: attach a queue pair to a peer of fuzzed geometry and memory. */
static void attach(struct input *in)
{
    struct nd_cm_msg m;
    nd_qp *qp;

    if (nd_adapter_create_queue_pair(adapter, cq, cq, NULL, 4, 4, 1, 1, 0, &qp) != ND_SUCCESS)
        abort();
    nd_cm_msg_init(&m, ND_CM_REQ);
    struct shm_qp_desc dd = { 0 }, *d = &dd;

    d->rq_entries = take(in, 1) & 1 ? 1u << (take(in, 1) % 18) : take(in, 4);
    d->max_sge = take(in, 1);
    d->slot_size = take(in, 1) & 1 ? 256u << (take(in, 1) % 8) : take(in, 4);
    d->arm_slot = take(in, 2);
    d->iarm_slot = take(in, 2);
    d->srq_entries = take(in, 1) & 1 ? 1u << (take(in, 1) % 10) : 0;
    d->srq_max_sge = take(in, 1);
    d->region_off = take(in, 1) & 1 ? (uint64_t)take(in, 4) << (take(in, 1) % 13) : 0;
    struct nd_qp_layout l;
    uint32_t rq = d->rq_entries && d->rq_entries <= 65536 ? d->rq_entries : 1;
    uint32_t sge = d->max_sge && d->max_sge <= 64 ? d->max_sge : 1;
    uint32_t slot = d->slot_size && d->slot_size <= 65536 ? d->slot_size : 256;
    nd_qp_layout(rq, sge, slot, &l);
    int fds[3] = { peer_region(in, l.size), take(in, 1) & 1 ? peer_region(in, 4096) : dup(nd_adapter_ro_fd(adapter)),
                   peer_region(in, 1u << 16) };
    for (int i = 0; i < 3; i++)
        name(in, fds[i], &d->refs[i == 2 ? 4 : i]);
    d->rcq_serial = take(in, 1) % 4;
    d->icq_serial = take(in, 1) % 4;
    d->refs[2].fd = (int32_t)(take(in, 1) % 32);
    d->refs[3].fd = (int32_t)(take(in, 1) % 32);
    shm_desc_put(&m, d);
    shm_attach(qp, getpid(), &m, 1, 1);
    nd_qp_close(qp);
    for (int i = 0; i < 3; i++)
        close(fds[i]);
    int efd = nd_fd_fetch_eventfd(getpid(), (int32_t)(take(in, 1) % 32));   /* any of ours */
    if (efd >= 0)
        close(efd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct input in = { data, size };

    if (!adapter)
        setup();
    int before = open_fds();
    raw_message(&in);
    attach(&in);
    if (open_fds() != before)
        abort();                    /* a descriptor leaked */
    return 0;
}
