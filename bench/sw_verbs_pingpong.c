// SPDX-License-Identifier: MIT
/*
 * sw_verbs_pingpong: sw_pingpong through the verbs drop-in. One thread, two queue pairs of
 * one process connected to each other through rdma_cm, 8-byte ping-pong: each half round
 * trip is one side's ibv_post_recv, signalled ibv_post_send, the poll of its send CQ for
 * that Send's completion and the poll of the peer's receive CQ for the message; the send
 * and receive CQs are separate, as perftest's. Beside sw_pingpong (the same turn on the ND
 * API, one CQ a side) it tells what the front end costs per message, and under callgrind
 * by how many instructions. Also the cost of one poll of an empty CQ. Over iwarp a Send
 * completes once the peer's answer to a fence proves it placed, and here the peer's end
 * is not polled while the Send's CQ is: the engine thread answers, at its own pace, so the
 * iwarp figure is not the software path (the test runs it only to see it work).
 * -f forks: the two ends in two processes, each making ib_send_lat's calls in its order
 * (the server polls the receive, re-posts it, sends and polls the Send's completion; the
 * client sends, polls the Send's, then the receive, and re-posts it), with none of
 * perftest's own work around them: beside ib_send_lat and nd_pingpong -N it tells the
 * drop-in's part of a latency gap from perftest's; with -T each side also does perftest's
 * own work of a turn (tools/perftest_turn.h).
 *   sw_verbs_pingpong [-i iterations] [-I (no inline)] [-f [-T]] [--json]
 */
#include <rdma/rdma_cma.h>

#include "perftest_turn.h"

#include <arpa/inet.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define DIE(...) do { fprintf(stderr, "sw_verbs_pingpong: " __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)
#define CHECK(c) do { if (!(c)) DIE("%s failed (line %d)", #c, __LINE__); } while (0)
#define WARMUP 10000
#define FORK_RECVS 32               /* receives each side of -f keeps posted */

/* Each side's requests are built once, as perftest builds its own: a loop that fills a
 * request per post measures its own stores as much as the library. */
struct side {
    struct rdma_cm_id *id;
    struct ibv_cq *send_cq, *recv_cq;
    struct ibv_sge send, recv;
    struct ibv_send_wr send_wr;
    struct ibv_recv_wr recv_wr;
};

/* -T: perftest's own work per turn (tools/perftest_turn.h); each process has its copy. */
static struct perftest_turn turn_work;

static void turn_work_before_send(struct side *s, uint32_t turn)
{
    if (perftest_turn_work(&turn_work, turn))
        s->send_wr.send_flags |= IBV_SEND_SIGNALED;
}

static double now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static struct rdma_cm_event *expect(struct rdma_event_channel *ch, enum rdma_cm_event_type type)
{
    struct rdma_cm_event *ev;

    CHECK(rdma_get_cm_event(ch, &ev) == 0);
    if (ev->event != type)
        DIE("got %s, wanted %s", rdma_event_str(ev->event), rdma_event_str(type));
    return ev;
}

static void take(struct rdma_event_channel *ch, enum rdma_cm_event_type type)
{
    CHECK(rdma_ack_cm_event(expect(ch, type)) == 0);
}

static void create_qp(struct side *s, struct ibv_pd *pd)
{
    struct ibv_qp_init_attr qa = { .qp_type = IBV_QPT_RC,
                                   .cap = { .max_send_wr = 64, .max_recv_wr = 64, .max_send_sge = 1,
                                            .max_recv_sge = 1, .max_inline_data = 64 } };

    CHECK((s->send_cq = ibv_create_cq(s->id->verbs, 64, NULL, NULL, 0)) != NULL);
    CHECK((s->recv_cq = ibv_create_cq(s->id->verbs, 64, NULL, NULL, 0)) != NULL);
    qa.send_cq = s->send_cq;
    qa.recv_cq = s->recv_cq;
    CHECK(rdma_create_qp(s->id, pd, &qa) == 0);
}

/* s[0] connects to s[1], both driven from this thread: each id has a channel of its own. */
static void connect_pair(struct side s[2], struct rdma_event_channel *ch[2], struct rdma_cm_id **listener)
{
    struct sockaddr_in addr = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    struct rdma_conn_param cp = { .responder_resources = 1, .initiator_depth = 1 };
    struct rdma_cm_event *ev;

    CHECK(rdma_create_id(ch[1], listener, NULL, RDMA_PS_TCP) == 0);
    CHECK(rdma_bind_addr(*listener, (struct sockaddr *)&addr) == 0 && rdma_listen(*listener, 1) == 0);
    addr.sin_port = ((struct sockaddr_in *)rdma_get_local_addr(*listener))->sin_port;
    CHECK(rdma_create_id(ch[0], &s[0].id, NULL, RDMA_PS_TCP) == 0);
    CHECK(rdma_resolve_addr(s[0].id, NULL, (struct sockaddr *)&addr, 1000) == 0);
    take(ch[0], RDMA_CM_EVENT_ADDR_RESOLVED);
    CHECK(rdma_resolve_route(s[0].id, 1000) == 0);
    take(ch[0], RDMA_CM_EVENT_ROUTE_RESOLVED);
    create_qp(&s[0], NULL);
    CHECK(rdma_connect(s[0].id, &cp) == 0);
    ev = expect(ch[1], RDMA_CM_EVENT_CONNECT_REQUEST);
    s[1].id = ev->id;
    CHECK(rdma_ack_cm_event(ev) == 0);
    create_qp(&s[1], s[0].id->pd);
    CHECK(rdma_accept(s[1].id, &cp) == 0);
    take(ch[0], RDMA_CM_EVENT_ESTABLISHED);
    take(ch[1], RDMA_CM_EVENT_ESTABLISHED);
}

static void poll_one(struct ibv_cq *cq, enum ibv_wc_opcode want)
{
    struct ibv_wc wc;
    int n;

    while ((n = ibv_poll_cq(cq, 1, &wc)) == 0)
        ;
    if (n != 1 || wc.status != IBV_WC_SUCCESS || wc.opcode != want)
        DIE("poll: %d, status %s, opcode %d", n, ibv_wc_status_str(wc.status), wc.opcode);
}

/* @s's buffers: 8 bytes sent from @send, receives into 1 KiB at @recv. */
static void side_buffers(struct side *s, char *send, char *recv, uint32_t lkey, unsigned flags)
{
    s->send = (struct ibv_sge){ (uintptr_t)send, 8, lkey };
    s->recv = (struct ibv_sge){ (uintptr_t)recv, 1024, lkey };
    s->send_wr = (struct ibv_send_wr){ .sg_list = &s->send, .num_sge = 1, .opcode = IBV_WR_SEND, .send_flags = flags };
    s->recv_wr = (struct ibv_recv_wr){ .sg_list = &s->recv, .num_sge = 1 };
}

static void post_recv(struct side *s)
{
    struct ibv_recv_wr *bad;

    CHECK(ibv_post_recv(s->id->qp, &s->recv_wr, &bad) == 0);
}

static void post_send(struct side *s)
{
    struct ibv_send_wr *bad;

    CHECK(ibv_post_send(s->id->qp, &s->send_wr, &bad) == 0);
}

/* A side of -f: its own buffer registered on its id's PD, FORK_RECVS receives posted. */
static struct ibv_mr *fork_side_ready(struct side *s, char *buf, unsigned flags)
{
    struct ibv_mr *mr;

    create_qp(s, NULL);
    CHECK((mr = ibv_reg_mr(s->id->pd, buf, 2048, IBV_ACCESS_LOCAL_WRITE)) != NULL);
    side_buffers(s, buf, buf + 1024, mr->lkey, flags);
    for (int i = 0; i < FORK_RECVS; i++)
        post_recv(s);
    return mr;
}

static void fork_side_close(struct side *s, struct ibv_mr *mr)
{
    CHECK(ibv_dereg_mr(mr) == 0);
    rdma_destroy_qp(s->id);
    CHECK(rdma_destroy_id(s->id) == 0);
    CHECK(ibv_destroy_cq(s->send_cq) == 0 && ibv_destroy_cq(s->recv_cq) == 0);
}

/* The forked server: listens on loopback, says its port on @ready, answers every message. */
static void fork_server(int ready, uint32_t turns, unsigned flags)
{
    struct sockaddr_in addr = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    struct rdma_conn_param cp = { .responder_resources = 1, .initiator_depth = 1 };
    struct rdma_event_channel *ch = rdma_create_event_channel();
    static char buf[2048];
    struct rdma_cm_id *listener;
    struct rdma_cm_event *ev;
    struct side s;

    CHECK(ch && rdma_create_id(ch, &listener, NULL, RDMA_PS_TCP) == 0);
    CHECK(rdma_bind_addr(listener, (struct sockaddr *)&addr) == 0 && rdma_listen(listener, 1) == 0);
    CHECK(write(ready, &((struct sockaddr_in *)rdma_get_local_addr(listener))->sin_port, 2) == 2);
    ev = expect(ch, RDMA_CM_EVENT_CONNECT_REQUEST);
    s.id = ev->id;
    CHECK(rdma_ack_cm_event(ev) == 0);
    struct ibv_mr *mr = fork_side_ready(&s, buf, flags);
    CHECK(rdma_accept(s.id, &cp) == 0);
    take(ch, RDMA_CM_EVENT_ESTABLISHED);
    for (uint32_t i = 0; i < turns; i++) {
        poll_one(s.recv_cq, IBV_WC_RECV);
        post_recv(&s);
        turn_work_before_send(&s, i);
        post_send(&s);
        poll_one(s.send_cq, IBV_WC_SEND);
    }
    take(ch, RDMA_CM_EVENT_DISCONNECTED);
    fork_side_close(&s, mr);
    CHECK(rdma_destroy_id(listener) == 0);
    rdma_destroy_event_channel(ch);     /* after every id on it */
    exit(0);
}

/* -f: forks the server before this process touches the library; returns the half round
 * trip in ns. */
static double two_processes(uint32_t iters, unsigned flags)
{
    struct sockaddr_in addr = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    struct rdma_conn_param cp = { .responder_resources = 1, .initiator_depth = 1 };
    static char buf[2048];
    struct rdma_event_channel *ch;
    struct side s;
    int pp[2], st;
    double t0 = 0, half;
    pid_t pid;

    CHECK(pipe(pp) == 0);
    CHECK((pid = fork()) >= 0);
    if (pid == 0) {
        close(pp[0]);
        fork_server(pp[1], WARMUP + iters, flags);
    }
    close(pp[1]);
    CHECK(read(pp[0], &addr.sin_port, 2) == 2);
    close(pp[0]);
    CHECK((ch = rdma_create_event_channel()) != NULL);
    CHECK(rdma_create_id(ch, &s.id, NULL, RDMA_PS_TCP) == 0);
    CHECK(rdma_resolve_addr(s.id, NULL, (struct sockaddr *)&addr, 1000) == 0);
    take(ch, RDMA_CM_EVENT_ADDR_RESOLVED);
    CHECK(rdma_resolve_route(s.id, 1000) == 0);
    take(ch, RDMA_CM_EVENT_ROUTE_RESOLVED);
    struct ibv_mr *mr = fork_side_ready(&s, buf, flags);
    CHECK(rdma_connect(s.id, &cp) == 0);
    take(ch, RDMA_CM_EVENT_ESTABLISHED);
    for (int64_t i = -WARMUP; i < (int64_t)iters; i++) {
        if (i == 0)
            t0 = now_ns();
        turn_work_before_send(&s, (uint32_t)(i + WARMUP));
        post_send(&s);
        poll_one(s.send_cq, IBV_WC_SEND);
        poll_one(s.recv_cq, IBV_WC_RECV);
        post_recv(&s);
    }
    half = (now_ns() - t0) / iters / 2;
    CHECK(rdma_disconnect(s.id) == 0);
    take(ch, RDMA_CM_EVENT_DISCONNECTED);
    fork_side_close(&s, mr);
    rdma_destroy_event_channel(ch);
    CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
    return half;
}

int main(int argc, char **argv)
{
    uint32_t iters = 1000000;
    unsigned flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE;
    bool json = false, forked = false, work = false;
    static char buf[8192];
    struct side s[2];
    struct rdma_event_channel *ch[2];
    struct rdma_cm_id *listener;
    struct ibv_mr *mr;
    struct ibv_wc wc;

    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-i") && i + 1 < argc)
            iters = (uint32_t)strtoul(argv[++i], NULL, 0);
        else if (!strcmp(argv[i], "-I"))
            flags &= ~IBV_SEND_INLINE;
        else if (!strcmp(argv[i], "-f"))
            forked = true;
        else if (!strcmp(argv[i], "-T"))
            work = true;
        else if (!strcmp(argv[i], "--json"))
            json = true;
        else
            DIE("usage: sw_verbs_pingpong [-i iterations] [-I] [-f [-T]] [--json]");
    }
    if (iters == 0 || iters > UINT32_MAX - WARMUP)
        DIE("-i must be at least 1 and leave room for the warm-up turns");
    if (work && !forked)
        DIE("-T goes with -f");
    /* Before the fork, so that both sides have their own copy. */
    if (work)
        CHECK(perftest_turn_init(&turn_work, WARMUP + iters));
    if (forked) {
        double half = two_processes(iters, flags);

        if (json)
            printf("{\"iterations\":%u,\"processes\":2,\"latency_us\":%.3f}\n", iters, half / 1000);
        else
            printf("two processes, 8 B: %.3f us per half round trip\n", half / 1000);
        perftest_turn_fini(&turn_work);
        return 0;
    }
    for (int i = 0; i < 2; i++)
        CHECK((ch[i] = rdma_create_event_channel()) != NULL);
    connect_pair(s, ch, &listener);
    CHECK((mr = ibv_reg_mr(s[0].id->pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE)) != NULL);
    for (int i = 0; i < 2; i++) {
        side_buffers(&s[i], buf + 64 * i, buf + 1024 + 1024 * i, mr->lkey, flags);
    }
    for (int k = 0; k < 2; k++)
        post_recv(&s[k]);
    double t0 = 0;
    for (int64_t i = -WARMUP; i < (int64_t)iters; i++) {
        if (i == 0)
            t0 = now_ns();
        for (int k = 0; k < 2; k++) {
            post_recv(&s[k]);
            post_send(&s[k]);
            poll_one(s[k].send_cq, IBV_WC_SEND);
            poll_one(s[!k].recv_cq, IBV_WC_RECV);
        }
    }
    double half = (now_ns() - t0) / iters / 2;
    t0 = now_ns();
    for (uint32_t i = 0; i < iters; i++)
        if (ibv_poll_cq(s[0].send_cq, 1, &wc))
            DIE("a completion from an idle CQ");
    double empty = (now_ns() - t0) / iters;
    if (json)
        printf("{\"iterations\":%u,\"half_roundtrip_ns\":%.1f,\"empty_poll_ns\":%.1f}\n", iters, half, empty);
    else
        printf("one thread, 8 B: %.1f ns of software per half round trip; empty poll %.1f ns\n", half, empty);
    CHECK(rdma_disconnect(s[0].id) == 0);
    take(ch[0], RDMA_CM_EVENT_DISCONNECTED);
    take(ch[1], RDMA_CM_EVENT_DISCONNECTED);
    CHECK(ibv_dereg_mr(mr) == 0);
    for (int i = 0; i < 2; i++) {
        rdma_destroy_qp(s[i].id);
        CHECK(rdma_destroy_id(s[i].id) == 0);
        CHECK(ibv_destroy_cq(s[i].send_cq) == 0 && ibv_destroy_cq(s[i].recv_cq) == 0);
    }
    CHECK(rdma_destroy_id(listener) == 0);
    for (int i = 0; i < 2; i++)
        rdma_destroy_event_channel(ch[i]);
    return 0;
}
