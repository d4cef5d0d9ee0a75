// SPDX-License-Identifier: MIT
/*
 * UD queue pairs between two processes (forked, synchronised on pipes): a datagram with
 * immediate data lands behind the 40 bytes of GRH space, with its sender's QP number and a
 * GRH from which ibv_create_ah_from_wc answers it; one with another Q_Key is dropped; one
 * longer than its receive completes that receive with IBV_WC_LOC_LEN_ERR and the QP goes
 * on; a remote Q_Key with the high bit set sends the QP's own; a Send longer than the
 * port's MTU, or an RDMA opcode, is refused at the post (EINVAL); the state moves take the
 * kernel's required attributes; ERR flushes posted receives. Then a burst far larger than
 * the receiver's queue and the kernel's buffer, sent before the receiver polls: whatever is
 * lost is lost whole (every datagram that arrives is intact, in order, in range), and the
 * marker sent after it still arrives: no hang, no crash.
 */
#include <errno.h>
#include <infiniband/verbs.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CHECK(c) do { if (!(c)) { fprintf(stderr, "%s:%d: %s (errno %d)\n", __FILE__, __LINE__, #c, errno); exit(1); } } while (0)
#define QKEY 0x11111111u
#define GRH 40
#define BUF 65536
#define BURST 20000

struct side {
    struct ibv_context *ctx;
    struct ibv_pd *pd;
    struct ibv_cq *cq;
    struct ibv_qp *qp;
    struct ibv_mr *mr;
    uint8_t *buf;
    union ibv_gid gid;
    int gid_index;
    uint32_t mtu;
};

struct peer {
    uint32_t qpn;
    union ibv_gid gid;
};

static int to_peer, from_peer;

static void put(const void *p, size_t n)
{
    CHECK(write(to_peer, p, n) == (ssize_t)n);
}

static void get(void *p, size_t n)
{
    CHECK(read(from_peer, p, n) == (ssize_t)n);
}

static void sync_point(void)
{
    char c = 's';

    put(&c, 1);
    get(&c, 1);
}

static void open_side(struct side *s)
{
    struct ibv_device **list = ibv_get_device_list(NULL);
    struct ibv_qp_init_attr ia = { .qp_type = IBV_QPT_UD, .cap = { .max_send_wr = 64, .max_recv_wr = 256,
                                                                   .max_send_sge = 2, .max_recv_sge = 2 } };
    struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .pkey_index = 0, .port_num = 1, .qkey = QKEY };
    struct ibv_port_attr pa;

    CHECK(list && list[0] && (s->ctx = ibv_open_device(list[0])));
    ibv_free_device_list(list);
    CHECK((s->pd = ibv_alloc_pd(s->ctx)) && (s->cq = ibv_create_cq(s->ctx, 512, NULL, NULL, 0)));
    CHECK((s->buf = calloc(1, BUF)) && (s->mr = ibv_reg_mr(s->pd, s->buf, BUF, IBV_ACCESS_LOCAL_WRITE)));
    ia.send_cq = ia.recv_cq = s->cq;
    CHECK((s->qp = ibv_create_qp(s->pd, &ia)) && s->qp->qp_type == IBV_QPT_UD);
    /* The kernel's rule: RESET to INIT names the P_Key index, the port and the Q_Key. */
    errno = 0;
    CHECK(ibv_modify_qp(s->qp, &a, IBV_QP_STATE | IBV_QP_PORT | IBV_QP_QKEY) == EINVAL);
    CHECK(ibv_modify_qp(s->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY) == 0);
    a.qp_state = IBV_QPS_RTR;
    CHECK(ibv_modify_qp(s->qp, &a, IBV_QP_STATE) == 0);
    a.qp_state = IBV_QPS_RTS;
    CHECK(ibv_modify_qp(s->qp, &a, IBV_QP_STATE) == EINVAL);    /* RTS needs the SQ PSN */
    a.sq_psn = 0x123;
    CHECK(ibv_modify_qp(s->qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN) == 0);
    CHECK(ibv_query_port(s->ctx, 1, &pa) == 0);
    s->mtu = 128u << pa.active_mtu;
    s->gid_index = -1;
    for (int i = 0; i < pa.gid_tbl_len && s->gid_index < 0; i++)
        if (ibv_query_gid(s->ctx, 1, i, &s->gid) == 0 && s->gid.raw[10] == 0xff && s->gid.raw[11] == 0xff &&
            s->gid.raw[12] == 127)
            s->gid_index = i;
    CHECK(s->gid_index >= 0);
}

static void post_recv(struct side *s, uint64_t id, uint32_t off, uint32_t len)
{
    struct ibv_sge sge = { (uintptr_t)s->buf + off, len, s->mr->lkey };
    struct ibv_recv_wr wr = { .wr_id = id, .sg_list = &sge, .num_sge = 1 }, *bad;

    CHECK(ibv_post_recv(s->qp, &wr, &bad) == 0);
}

static int post_send(struct side *s, struct ibv_ah *ah, uint32_t qpn, uint32_t qkey, uint32_t off, uint32_t len,
                     int imm, enum ibv_wr_opcode op)
{
    struct ibv_sge sge = { (uintptr_t)s->buf + off, len, s->mr->lkey };
    struct ibv_send_wr wr = { .wr_id = off, .sg_list = &sge, .num_sge = 1, .opcode = op,
                              .send_flags = IBV_SEND_SIGNALED }, *bad;

    if (imm) {
        wr.opcode = IBV_WR_SEND_WITH_IMM;
        wr.imm_data = htobe32(0x12345678);
    }
    wr.wr.ud.ah = ah;
    wr.wr.ud.remote_qpn = qpn;
    wr.wr.ud.remote_qkey = qkey;
    return ibv_post_send(s->qp, &wr, &bad);
}

static struct ibv_wc poll_one(struct side *s)
{
    struct ibv_wc wc;
    time_t end = time(NULL) + 10;
    int n;

    while ((n = ibv_poll_cq(s->cq, 1, &wc)) == 0)
        CHECK(time(NULL) < end);
    CHECK(n == 1);
    return wc;
}

static struct ibv_ah *ah_to(struct side *s, const union ibv_gid *gid)
{
    struct ibv_ah_attr a = { .is_global = 1, .port_num = 1,
                             .grh = { .dgid = *gid, .sgid_index = (uint8_t)s->gid_index, .hop_limit = 64 } };
    struct ibv_ah *ah = ibv_create_ah(s->pd, &a);

    CHECK(ah);
    return ah;
}

/* A: sends, then answers the burst test. */
static void side_a(struct side *s, const struct peer *b)
{
    struct ibv_ah *ah = ah_to(s, &b->gid);
    struct ibv_wc wc;

    memset(s->buf, 'a', 4096);
    memset(s->buf + 4096, 'c', 4096);
    memset(s->buf + 8192, 'd', 4096);
    sync_point();                                               /* B's receives are posted */
    CHECK(post_send(s, ah, b->qpn, 0x22222222, 0, 64, 0, IBV_WR_SEND) == 0);     /* the wrong Q_Key */
    CHECK(post_send(s, ah, b->qpn, QKEY, 0, 100, 1, IBV_WR_SEND) == 0);
    CHECK(post_send(s, ah, b->qpn, QKEY, 4096, 200, 0, IBV_WR_SEND) == 0);     /* too long for r1 */
    CHECK(post_send(s, ah, b->qpn, 0x80000000u, 8192, 50, 0, IBV_WR_SEND) == 0);   /* our own Q_Key */
    for (int i = 0; i < 4; i++) {
        wc = poll_one(s);
        CHECK(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_SEND);
    }
    errno = 0;
    CHECK(post_send(s, ah, b->qpn, QKEY, 0, s->mtu + 1, 0, IBV_WR_SEND) == EINVAL);
    CHECK(post_send(s, ah, b->qpn, QKEY, 0, 8, 0, IBV_WR_RDMA_WRITE) == EINVAL);
    /* B's answer, to the address handle it made from our datagram's GRH. */
    post_recv(s, 7, 16384, GRH + 64);
    sync_point();
    wc = poll_one(s);
    CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == 7 && wc.byte_len == GRH + 10 && wc.src_qp == b->qpn);
    CHECK(!memcmp(s->buf + 16384 + GRH, "0123456789", 10));
    /* A datagram of exactly the MTU. */
    memset(s->buf, 'm', s->mtu);
    CHECK(post_send(s, ah, b->qpn, QKEY, 0, s->mtu, 0, IBV_WR_SEND) == 0);
    CHECK(poll_one(s).status == IBV_WC_SUCCESS);
    sync_point();
    /* The burst: B has 16 receives out; far more come. */
    sync_point();
    for (uint32_t i = 0; i < BURST; i++) {
        memset(s->buf, (int)(i & 0xff), 1024);
        memcpy(s->buf, &i, sizeof(i));
        CHECK(post_send(s, ah, b->qpn, QKEY, 0, 1024, 0, IBV_WR_SEND) == 0);
        CHECK(poll_one(s).status == IBV_WC_SUCCESS);
    }
    sync_point();               /* all sent before B takes one: the kernel's buffer overflows */
    uint32_t marker = UINT32_MAX;

    memcpy(s->buf, &marker, sizeof(marker));
    for (;;) {                  /* the marker, until B says it came (it may be lost too) */
        struct pollfd p = { .fd = from_peer, .events = POLLIN };
        char c;

        CHECK(post_send(s, ah, b->qpn, QKEY, 0, 4, 0, IBV_WR_SEND) == 0);
        CHECK(poll_one(s).status == IBV_WC_SUCCESS);
        if (poll(&p, 1, 100) == 1) {
            get(&c, 1);
            CHECK(c == 'y');
            break;
        }
    }
    ibv_destroy_ah(ah);
}

static void side_b(struct side *s, const struct peer *a)
{
    struct ibv_grh grh;
    struct ibv_wc wc;
    struct ibv_ah *ah;

    post_recv(s, 0, 0, GRH + 256);
    post_recv(s, 1, 4096, GRH + 64);
    post_recv(s, 2, 8192, GRH + 256);
    sync_point();
    wc = poll_one(s);           /* the wrong Q_Key's never came: the first is the second sent */
    CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == 0 && wc.opcode == IBV_WC_RECV && wc.byte_len == GRH + 100);
    CHECK(wc.wc_flags == (IBV_WC_GRH | IBV_WC_WITH_IMM) && wc.imm_data == htobe32(0x12345678));
    CHECK(wc.src_qp == a->qpn && wc.qp_num == s->qp->qp_num && wc.pkey_index == 0);
    for (int i = 0; i < 100; i++)
        CHECK(s->buf[GRH + i] == 'a');
    memcpy(&grh, s->buf, sizeof(grh));
    struct ibv_wc first = wc;

    wc = poll_one(s);
    CHECK(wc.wr_id == 1 && wc.status == IBV_WC_LOC_LEN_ERR);
    wc = poll_one(s);
    CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == 2 && wc.byte_len == GRH + 50 && wc.wc_flags == IBV_WC_GRH);
    CHECK(s->buf[8192 + GRH] == 'd' && s->buf[8192 + GRH + 49] == 'd');
    /* Answer through the GRH: the address handle names A's address. */
    struct ibv_ah_attr aa;

    CHECK(ibv_init_ah_from_wc(s->ctx, 1, &first, &grh, &aa) == 0 && aa.is_global);
    CHECK(!memcmp(&aa.grh.dgid, &a->gid, sizeof(a->gid)));
    CHECK((ah = ibv_create_ah_from_wc(s->pd, &first, &grh, 1)));
    memcpy(s->buf + 12288, "0123456789", 10);
    post_recv(s, 3, 0, GRH + s->mtu);
    CHECK(post_send(s, ah, first.src_qp, QKEY, 12288, 10, 0, IBV_WR_SEND) == 0);
    CHECK(poll_one(s).status == IBV_WC_SUCCESS);
    sync_point();
    wc = poll_one(s);
    CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == 3 && wc.byte_len == GRH + s->mtu && s->buf[GRH] == 'm');
    sync_point();
    /* The burst. */
    uint32_t got = 0, seen = 0;

    for (uint64_t r = 0; r < 16; r++)
        post_recv(s, 100 + r, (uint32_t)(r * 2048), GRH + 1024);
    sync_point();
    sync_point();
    for (;;) {
        uint32_t seq;

        wc = poll_one(s);
        CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id >= 100 && wc.wr_id < 116);
        uint8_t *m = s->buf + (wc.wr_id - 100) * 2048 + GRH;

        memcpy(&seq, m, sizeof(seq));
        if (seq == UINT32_MAX) {
            CHECK(wc.byte_len == GRH + 4);
            put("y", 1);
            break;
        }
        CHECK(wc.byte_len == GRH + 1024 && seq < BURST && (seen == 0 || seq >= seen));
        for (int i = 4; i < 1024; i++)
            CHECK(m[i] == (uint8_t)(seq & 0xff));
        seen = seq + 1;
        got++;
        post_recv(s, wc.wr_id, (uint32_t)(wc.wr_id - 100) * 2048, GRH + 1024);
    }
    printf("burst: %u of %u datagrams received, the rest dropped\n", got, BURST);
    /* ERR flushes what is posted. */
    struct ibv_qp_attr e = { .qp_state = IBV_QPS_ERR };

    CHECK(ibv_modify_qp(s->qp, &e, IBV_QP_STATE) == 0);
    for (int i = 0, flushed = 0; i < 15; i++) {     /* a repeated marker may take one first */
        wc = poll_one(s);
        CHECK(wc.status == IBV_WC_WR_FLUSH_ERR || (wc.status == IBV_WC_SUCCESS && wc.byte_len == GRH + 4 && !flushed));
        flushed |= wc.status == IBV_WC_WR_FLUSH_ERR;
    }
    CHECK(ibv_poll_cq(s->cq, 1, &wc) == 0);
    ibv_destroy_ah(ah);
}

int main(void)
{
    int ab[2], ba[2], st;
    struct side s;
    struct peer me, other;
    pid_t pid;

    CHECK(pipe(ab) == 0 && pipe(ba) == 0);
    pid = fork();
    CHECK(pid >= 0);
    to_peer = pid ? ab[1] : ba[1];
    from_peer = pid ? ba[0] : ab[0];
    open_side(&s);
    me = (struct peer){ .qpn = s.qp->qp_num, .gid = s.gid };
    put(&me, sizeof(me));
    get(&other, sizeof(other));
    if (pid)
        side_a(&s, &other);
    else
        side_b(&s, &other);
    CHECK(ibv_destroy_qp(s.qp) == 0 && ibv_dereg_mr(s.mr) == 0 && ibv_destroy_cq(s.cq) == 0);
    CHECK(ibv_dealloc_pd(s.pd) == 0 && ibv_close_device(s.ctx) == 0);
    free(s.buf);
    if (!pid)
        return 0;
    CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
    printf("UD ok\n");
    return 0;
}
