// SPDX-License-Identifier: MIT
/*
 * nd_alloc_memory: regions registered inside such an allocation are mapped by same-host
 * peers, which then Write, Read and place large Sends with memcpy. The client forbids
 * itself cross-memory calls (seccomp) once connected, so over shm every transfer into
 * mapped memory must take the mapped path, and the control at the end, a Write into
 * ordinary memory, must fail. Also: the allocation calls' statuses, free refused while a
 * region is registered inside, a second allocation after the first is freed (the peer
 * must not write through its stale mapping), and a window inside a mapped region. Over
 * iwarp the same transfers run and the control succeeds.
 */
#include "t_conn.h"

#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#define PLAIN (1u << 20)
#define ALLOC ((3u << 20) + 100)
#define REGION (2u << 20)
#define BIG_SEND ((64u << 10) + 4096)       /* more than the largest message slot */
#define MID_SEND (32u << 10)                /* fits a slot, above what always takes one */
#define SENDS_AT (REGION - BIG_SEND - MID_SEND) /* the receives; the Writes fill what is below */

struct hello {
    uint64_t mapped, plain;
    uint32_t mapped_token, plain_token;
};

static int go[2], next[2];

static uint8_t pattern(uint32_t seed, uint32_t i)
{
    return (uint8_t)(seed * 37 + i * 11 + (i >> 9));
}

static bool over_iwarp(void)
{
    const char *t = getenv("ND_TRANSPORT");

    return t && strcmp(t, "iwarp") == 0;
}

/* Cross-memory calls fail EPERM from now on, in every thread. false where unsupported. */
static bool forbid_cross_memory(void)
{
#if defined(__x86_64__)
    const uint32_t arch = AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
    const uint32_t arch = AUDIT_ARCH_AARCH64;
#else
    const uint32_t arch = 0;
    return false;
#endif
    struct sock_filter f[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, arch, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_process_vm_readv, 2, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_process_vm_writev, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
    };
    struct sock_fprog prog = { sizeof(f) / sizeof(f[0]), f };

    return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 &&
           syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &prog) == 0;
}

static void check_alloc_statuses(void)
{
    void *p = (void *)1;
    int local;

    CHECK_ST(nd_alloc_memory(0, &p), ND_INVALID_PARAMETER_1);
    CHECK(p == NULL);
    CHECK_ST(nd_alloc_memory(4096, NULL), ND_INVALID_PARAMETER_2);
    CHECK_ST(nd_free_memory(&local), ND_INVALID_PARAMETER);
    CHECK_ST(nd_free_memory(NULL), ND_INVALID_PARAMETER);
}

/* A region of REGION bytes at offset 4096 of a fresh allocation. */
static uint8_t *mapped_region(struct t_side *s, nd_mr **mr, uint8_t **alloc)
{
    nd_overlapped ov = { .flags = ND_OV_FLAG_NO_PORT };
    void *p;

    CHECK_ST(nd_alloc_memory(ALLOC, &p), ND_SUCCESS);
    CHECK(p && ((uintptr_t)p & 4095) == 0 && ((uint8_t *)p)[ALLOC - 1] == 0);
    *alloc = p;
    CHECK_ST(nd_adapter_create_memory_region(s->a, s->port, mr), ND_SUCCESS);
    CHECK_ST(nd_mr_register(*mr, *alloc + 4096, REGION,
                            ND_MR_FLAG_ALLOW_LOCAL_WRITE | ND_MR_FLAG_ALLOW_REMOTE_WRITE | ND_MR_FLAG_ALLOW_REMOTE_READ,
                            &ov),
             ND_SUCCESS);
    return *alloc + 4096;
}

static void drop_region(nd_mr *mr, uint8_t *alloc)
{
    nd_overlapped ov = { .flags = ND_OV_FLAG_NO_PORT };

    CHECK_ST(nd_free_memory(alloc), ND_DEVICE_BUSY);
    CHECK_ST(nd_mr_deregister(mr, &ov), ND_SUCCESS);
    CHECK_ST(nd_mr_close(mr), ND_SUCCESS);
    CHECK_ST(nd_free_memory(alloc), ND_SUCCESS);
}

static void server(int port_pipe)
{
    struct t_side s;
    struct hello h;
    nd_mr *mr, *mr2;
    uint8_t *alloc, *alloc2, *region, *region2, c;
    uint16_t port;
    nd_mw *mw;

    /* Our ends only: a dead client then reads as EOF here, and a dead server there. */
    close(go[1]);
    close(next[0]);
    check_alloc_statuses();
    t_side_open(&s, PLAIN, 8, 2);
    region = mapped_region(&s, &mr, &alloc);
    h = (struct hello){ (uintptr_t)region, (uintptr_t)s.buf, nd_mr_get_remote_token(mr), s.token };
    port = t_listen(&s);
    CHECK(write(port_pipe, &port, sizeof(port)) == sizeof(port));
    nd_sge rm = { region + SENDS_AT, MID_SEND, nd_mr_get_local_token(mr) };
    nd_sge rs = { region + REGION - BIG_SEND, BIG_SEND, nd_mr_get_local_token(mr) };
    CHECK_ST(nd_qp_receive(s.qp, (void *)1, &rm, 1), ND_SUCCESS);
    CHECK_ST(nd_qp_receive(s.qp, (void *)2, &rs, 1), ND_SUCCESS);
    t_accept(&s, 8, &h, sizeof(h));

    /* The client's Writes, then its two Sends, land in the allocation. */
    nd_result r = t_poll_one(s.cq, 5000);
    CHECK(r.status == ND_SUCCESS && r.request_type == ND_REQUEST_TYPE_RECEIVE && r.bytes_transferred == MID_SEND);
    for (uint32_t i = 0; i < MID_SEND; i++)
        CHECK(region[SENDS_AT + i] == pattern(5, i));
    r = t_poll_one(s.cq, 5000);
    CHECK(r.status == ND_SUCCESS && r.request_type == ND_REQUEST_TYPE_RECEIVE && r.bytes_transferred == BIG_SEND);
    for (uint32_t i = 0; i < BIG_SEND; i++)
        CHECK(region[REGION - BIG_SEND + i] == pattern(2, i));
    CHECK(read(go[0], &c, 1) == 1);
    for (uint32_t i = 0; i < SENDS_AT; i++)
        CHECK(region[i] == pattern(1, i));

    /* A second allocation once the first is gone. */
    drop_region(mr, alloc);
    region2 = mapped_region(&s, &mr2, &alloc2);
    CHECK_ST(nd_adapter_create_memory_window(s.a, &mw), ND_SUCCESS);
    CHECK_ST(nd_qp_bind(s.qp, (void *)2, mr2, mw, region2 + 8192, 8192, ND_OP_FLAG_ALLOW_READ | ND_OP_FLAG_ALLOW_WRITE),
             ND_SUCCESS);
    r = t_poll_one(s.cq, 5000);
    CHECK(r.status == ND_SUCCESS && r.request_type == ND_REQUEST_TYPE_BIND);
    h.mapped = (uintptr_t)region2;
    h.mapped_token = nd_mr_get_remote_token(mr2);
    CHECK(write(next[1], &h, sizeof(h)) == sizeof(h));
    uint32_t wtoken = nd_mw_get_remote_token(mw);
    CHECK(write(next[1], &wtoken, sizeof(wtoken)) == sizeof(wtoken));
    CHECK(read(go[0], &c, 1) == 1);
    for (uint32_t i = 0; i < 65536; i++)   /* the window's Write went over the first pattern */
        CHECK(region2[i] == (i >= 8192 + 50 && i < 8192 + 150 ? 0xcd : pattern(3, i)));
    for (uint32_t i = 0; i < 8192; i++)
        CHECK(region2[65536 + i] == pattern(4, i));
    CHECK_ST(nd_qp_invalidate(s.qp, (void *)3, mw, 0), ND_SUCCESS);
    r = t_poll_one(s.cq, 5000);
    CHECK(r.status == ND_SUCCESS && r.request_type == ND_REQUEST_TYPE_INVALIDATE);
    CHECK_ST(nd_mw_close(mw), ND_SUCCESS);
    CHECK(write(next[1], "i", 1) == 1);
    CHECK(read(go[0], &c, 1) == 1);     /* the client is done */
    drop_region(mr2, alloc2);
    t_side_close(&s);
}

static void write_read(struct t_side *s, uint64_t addr, uint32_t token, uint32_t len, uint32_t seed)
{
    nd_sge w = { s->buf, len, s->token }, rd = { s->buf + PLAIN / 2, len, s->token };

    for (uint32_t i = 0; i < len; i++)
        s->buf[i] = pattern(seed, i);
    CHECK_ST(nd_qp_write(s->qp, (void *)5, &w, 1, addr, token, 0), ND_SUCCESS);
    nd_result r = t_poll_one(s->cq, 5000);
    CHECK(r.status == ND_SUCCESS && r.request_type == ND_REQUEST_TYPE_WRITE);
    memset(s->buf + PLAIN / 2, 0, len);
    CHECK_ST(nd_qp_read(s->qp, (void *)6, &rd, 1, addr, token, 0), ND_SUCCESS);
    r = t_poll_one(s->cq, 5000);
    CHECK(r.status == ND_SUCCESS && r.request_type == ND_REQUEST_TYPE_READ);
    CHECK(memcmp(s->buf, s->buf + PLAIN / 2, len) == 0);
}

int main(void)
{
    struct t_side s;
    struct hello h;
    uint32_t hl = sizeof(h), wtoken;
    uint16_t port;
    bool sealed;
    int pp;
    pid_t pid;
    char c;

    CHECK(pipe(go) == 0 && pipe(next) == 0);
    pid = t_fork_server(server, &pp);
    close(go[0]);
    close(next[1]);
    t_side_open(&s, PLAIN, 8, 2);
    CHECK(read(pp, &port, sizeof(port)) == sizeof(port));
    t_connect(&s, port, &h, &hl);
    sealed = !over_iwarp() && forbid_cross_memory();

    /* 1 MiB at a time, then the rest of the region but the receive at its end. */
    for (uint32_t off = 0; off < SENDS_AT; off += PLAIN / 2) {
        uint32_t len = SENDS_AT - off < PLAIN / 2 ? SENDS_AT - off : PLAIN / 2;
        nd_sge w = { s.buf, len, s.token };

        for (uint32_t i = 0; i < len; i++)
            s.buf[i] = pattern(1, off + i);
        CHECK_ST(nd_qp_write(s.qp, NULL, &w, 1, h.mapped + off, h.mapped_token, 0), ND_SUCCESS);
        nd_result r = t_poll_one(s.cq, 5000);
        CHECK(r.status == ND_SUCCESS && r.request_type == ND_REQUEST_TYPE_WRITE);
    }
    /* A Read into two local pieces: the copy out of the view crosses their boundary. */
    memset(s.buf + PLAIN / 2, 0, PLAIN / 2);
    nd_sge rd[2] = { { s.buf + PLAIN / 2, 777, s.token }, { s.buf + PLAIN / 2 + 777, PLAIN / 2 - 777, s.token } };
    CHECK_ST(nd_qp_read(s.qp, NULL, rd, 2, h.mapped + 1000, h.mapped_token, 0), ND_SUCCESS);
    nd_result r = t_poll_one(s.cq, 5000);
    CHECK(r.status == ND_SUCCESS && r.request_type == ND_REQUEST_TYPE_READ);
    for (uint32_t i = 0; i < PLAIN / 2; i++)
        CHECK(s.buf[PLAIN / 2 + i] == pattern(1, 1000 + i));
    /* A Send that fits a slot but goes straight into the mapped receive (one memcpy). */
    for (uint32_t i = 0; i < MID_SEND; i++)
        s.buf[i] = pattern(5, i);
    nd_sge mid = { s.buf, MID_SEND, s.token };
    CHECK_ST(nd_qp_send(s.qp, NULL, &mid, 1, 0), ND_SUCCESS);
    r = t_poll_one(s.cq, 5000);
    CHECK(r.status == ND_SUCCESS && r.request_type == ND_REQUEST_TYPE_SEND);
    /* Two pieces, so that the peer's stream copy crosses a local buffer boundary. */
    for (uint32_t i = 0; i < BIG_SEND; i++)
        s.buf[i] = pattern(2, i);
    nd_sge two[2] = { { s.buf, 1000, s.token }, { s.buf + 1000, BIG_SEND - 1000, s.token } };
    CHECK_ST(nd_qp_send(s.qp, NULL, two, 2, 0), ND_SUCCESS);
    r = t_poll_one(s.cq, 5000);
    CHECK(r.status == ND_SUCCESS && r.request_type == ND_REQUEST_TYPE_SEND);
    CHECK(write(go[1], "g", 1) == 1);

    /* The second allocation (the same descriptor number, likely): no stale mapping. */
    CHECK(read(next[0], &h, sizeof(h)) == sizeof(h));
    CHECK(read(next[0], &wtoken, sizeof(wtoken)) == sizeof(wtoken));
    write_read(&s, h.mapped, h.mapped_token, 65536, 3);
    nd_sge w = { s.buf, 100, s.token };
    memset(s.buf, 0xcd, 100);
    CHECK_ST(nd_qp_write(s.qp, NULL, &w, 1, h.mapped + 8192 + 50, wtoken, 0), ND_SUCCESS);
    r = t_poll_one(s.cq, 5000);
    CHECK(r.status == ND_SUCCESS && r.request_type == ND_REQUEST_TYPE_WRITE);
    write_read(&s, h.mapped + 65536, h.mapped_token, 8192, 4);     /* after the window's range */
    CHECK(write(go[1], "g", 1) == 1);
    CHECK(read(next[0], &c, 1) == 1);       /* the window is invalidated */

    /* The control: ordinary memory needs the cross-memory call we forbade. */
    CHECK_ST(nd_qp_write(s.qp, NULL, &w, 1, h.plain, h.plain_token, 0), ND_SUCCESS);
    r = t_poll_one(s.cq, 5000);
    CHECK(r.request_type == ND_REQUEST_TYPE_WRITE);
    CHECK(r.status == (sealed ? ND_ACCESS_VIOLATION : ND_SUCCESS));
    CHECK(write(go[1], "g", 1) == 1);
    t_expect_child_ok(pid);
    t_side_close(&s);
    printf("mapped memory: Write, Read, Send, a second allocation, a window: ok (%s)\n",
           sealed ? "cross-memory calls forbidden" : over_iwarp() ? "iwarp" : "no seccomp here");
    return 0;
}
