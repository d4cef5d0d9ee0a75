// SPDX-License-Identifier: MIT
/*
 * Remote atomics from many processes on one counter. A target accepts CLIENTS connections
 * (rdma_cm) and gives each its counter's address and rkey; every client runs ADDS
 * fetch-and-adds of 1, DEPTH at a time, and keeps the old values it got back. The final
 * count must be exact and the old values, all together, every number below it once: no
 * two atomics saw the same value. Then the rules, from one client, on another word of the
 * region: compare-and-swap swaps
 * only on a match and returns the old value either way; an unaligned address or a buffer
 * of other than 8 bytes is refused at post (EINVAL); a region registered without
 * IBV_ACCESS_REMOTE_ATOMIC fails with IBV_WC_REM_ACCESS_ERR. Runs on the transport
 * ND_TRANSPORT names; with none named, half the clients use shm and half iwarp. With "server ADDR" or "client ADDR PORT INDEX" it runs one side only
 * (test_verbs_atomic.sh runs them in two network namespaces).
 */
#include "cm_test.h"

#include <stdbool.h>
#include <string.h>
#include <sys/mman.h>

#define CLIENTS 4
#define ADDS 2000
#define DEPTH 8

struct target {
    uint64_t addr;          /* the counter */
    uint64_t plain;         /* a word of a region without remote atomics */
    uint32_t rkey, plain_rkey;
};

/* Shared with the parent: each client's old values, and the server's final count. */
struct results {
    uint64_t old[CLIENTS][ADDS];
    uint64_t final;
};

static struct results *res;

static void serve(struct sockaddr_in *addr, int ready, int clients)
{
    struct rdma_event_channel *ch = rdma_create_event_channel();
    static uint64_t counter[8] __attribute__((aligned(64))), plain;
    struct rdma_cm_id *l, *c[CLIENTS];
    struct ibv_mr *mr = NULL, *pmr = NULL;
    struct ibv_pd *pd = NULL;

    CHECK(ch && rdma_create_id(ch, &l, NULL, RDMA_PS_TCP) == 0);
    CHECK(rdma_bind_addr(l, (struct sockaddr *)addr) == 0 && rdma_listen(l, CLIENTS) == 0);
    if (ready >= 0)
        CHECK(write(ready, &((struct sockaddr_in *)rdma_get_local_addr(l))->sin_port, 2) == 2);
    /* Requests, establishments and disconnections of the clients come interleaved. */
    for (int accepted = 0, gone = 0; gone < clients;) {
        struct rdma_cm_event *ev;
        struct ibv_qp_init_attr qa = { .qp_type = IBV_QPT_RC,
                                       .cap = { .max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1,
                                                .max_recv_sge = 1 } };
        int i = accepted;

        CHECK(rdma_get_cm_event(ch, &ev) == 0);
        if (ev->event == RDMA_CM_EVENT_ESTABLISHED || ev->event == RDMA_CM_EVENT_DISCONNECTED) {
            gone += ev->event == RDMA_CM_EVENT_DISCONNECTED;
            CHECK(rdma_ack_cm_event(ev) == 0);
            continue;
        }
        CHECK(ev->event == RDMA_CM_EVENT_CONNECT_REQUEST && accepted < clients);
        c[accepted++] = ev->id;
        CHECK(rdma_ack_cm_event(ev) == 0);
        if (!pd) {
            pd = ibv_alloc_pd(c[i]->verbs);
            mr = ibv_reg_mr(pd, counter, sizeof(counter),
                            IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_REMOTE_READ);
            pmr = ibv_reg_mr(pd, &plain, sizeof(plain), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
            CHECK(pd && mr && pmr);
        }
        CHECK(rdma_create_qp(c[i], pd, &qa) == 0);
        struct target t = { (uintptr_t)counter, (uintptr_t)&plain, mr->rkey, pmr->rkey };
        struct rdma_conn_param cp = { .private_data = &t, .private_data_len = sizeof(t), .responder_resources = DEPTH };
        CHECK(rdma_accept(c[i], &cp) == 0);
    }
    printf("final count %llu, rules' word %llu\n", (unsigned long long)counter[0], (unsigned long long)counter[1]);
    CHECK(counter[0] == (uint64_t)clients * ADDS && counter[1] == 100);
    if (res)
        res->final = counter[0];
    for (int i = 0; i < clients; i++) {
        rdma_destroy_qp(c[i]);
        CHECK(rdma_destroy_id(c[i]) == 0);
    }
    CHECK(ibv_dereg_mr(mr) == 0 && ibv_dereg_mr(pmr) == 0 && ibv_dealloc_pd(pd) == 0);
    CHECK(rdma_destroy_id(l) == 0);
    rdma_destroy_event_channel(ch);
}

static void server(struct sockaddr_in *addr, int ready)
{
    serve(addr, ready, CLIENTS);
    exit(0);
}

static void post_atomic(struct ibv_qp *qp, struct ibv_mr *mr, void *buf, uint32_t len, enum ibv_wr_opcode op,
                        uint64_t raddr, uint32_t rkey, uint64_t cmp_add, uint64_t swap, uint64_t id, int want)
{
    struct ibv_sge sge = { (uintptr_t)buf, len, mr->lkey };
    struct ibv_send_wr wr = { .wr_id = id, .sg_list = &sge, .num_sge = 1, .opcode = op,
                              .send_flags = IBV_SEND_SIGNALED }, *bad;

    wr.wr.atomic.remote_addr = raddr;
    wr.wr.atomic.rkey = rkey;
    wr.wr.atomic.compare_add = cmp_add;
    wr.wr.atomic.swap = swap;
    CHECK(ibv_post_send(qp, &wr, &bad) == want);
}

/* The next completion: @id with @status (and, when it succeeded, @op and 8 bytes). */
static void expect_wc(struct ibv_cq *cq, uint64_t id, enum ibv_wc_status status, enum ibv_wc_opcode op)
{
    struct ibv_wc wc = cm_poll_one(cq);

    if (wc.wr_id != id || wc.status != status || (status == IBV_WC_SUCCESS && (wc.opcode != op || wc.byte_len != 8))) {
        fprintf(stderr, "wc %llu: %s opcode %d len %u; wanted %llu %s opcode %d\n", (unsigned long long)wc.wr_id,
                ibv_wc_status_str(wc.status), wc.opcode, wc.byte_len, (unsigned long long)id,
                ibv_wc_status_str(status), op);
        exit(1);
    }
}

/* The rules, on the word after the counter (0 until they leave it 100). */
static void rules(struct ibv_qp *qp, struct ibv_cq *cq, struct ibv_mr *mr, uint64_t *buf, const struct target *t)
{
    uint64_t word = t->addr + 8;

    /* A compare that fails returns the value and changes nothing; one that matches swaps. */
    post_atomic(qp, mr, buf, 8, IBV_WR_ATOMIC_CMP_AND_SWP, word, t->rkey, ~0ull, 7, 1, 0);
    expect_wc(cq, 1, IBV_WC_SUCCESS, IBV_WC_COMP_SWAP);
    CHECK(buf[0] == 0);
    post_atomic(qp, mr, buf, 8, IBV_WR_ATOMIC_CMP_AND_SWP, word, t->rkey, 0, 100, 2, 0);
    expect_wc(cq, 2, IBV_WC_SUCCESS, IBV_WC_COMP_SWAP);
    CHECK(buf[0] == 0);
    post_atomic(qp, mr, buf, 8, IBV_WR_ATOMIC_FETCH_AND_ADD, word, t->rkey, 0, 0, 3, 0);
    expect_wc(cq, 3, IBV_WC_SUCCESS, IBV_WC_FETCH_ADD);
    CHECK(buf[0] == 100);
    /* Refused at post: an unaligned target, a buffer of other than 8 bytes. */
    post_atomic(qp, mr, buf, 8, IBV_WR_ATOMIC_FETCH_AND_ADD, t->addr + 4, t->rkey, 1, 0, 4, EINVAL);
    post_atomic(qp, mr, buf, 4, IBV_WR_ATOMIC_FETCH_AND_ADD, t->addr, t->rkey, 1, 0, 5, EINVAL);
    /* Memory without remote atomics: the peer refuses it. */
    post_atomic(qp, mr, buf, 8, IBV_WR_ATOMIC_FETCH_AND_ADD, t->plain, t->plain_rkey, 1, 0, 6, 0);
    expect_wc(cq, 6, IBV_WC_REM_ACCESS_ERR, IBV_WC_FETCH_ADD);
}

/* One client: @adds fetch-and-adds of 1, DEPTH in flight, old values to @old. */
static void client(struct sockaddr_in *addr, int index, uint64_t *old, bool with_rules)
{
    struct rdma_event_channel *ch;
    struct rdma_cm_id *id = cm_client_resolved(&ch, addr);
    struct ibv_qp_init_attr qa = { .cap = { .max_send_wr = DEPTH, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1 },
                                   .qp_type = IBV_QPT_RC };
    struct ibv_cq *cq = cm_create_qp_with_cq(id, &qa);
    static uint64_t buf[DEPTH];
    struct ibv_mr *mr = ibv_reg_mr(id->pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
    struct rdma_conn_param cp = { .initiator_depth = DEPTH };
    struct rdma_cm_event *ev;
    struct target t;
    uint32_t posted = 0, done = 0;

    CHECK(mr && rdma_connect(id, &cp) == 0);
    ev = expect(ch, RDMA_CM_EVENT_ESTABLISHED);
    CHECK(ev->param.conn.private_data_len >= sizeof(t));
    memcpy(&t, ev->param.conn.private_data, sizeof(t));
    CHECK(rdma_ack_cm_event(ev) == 0);
    while (done < ADDS) {
        while (posted < ADDS && posted - done < DEPTH) {
            post_atomic(id->qp, mr, &buf[posted % DEPTH], 8, IBV_WR_ATOMIC_FETCH_AND_ADD, t.addr, t.rkey, 1, 0,
                        posted, 0);
            posted++;
        }
        /* Completions come in order: the next is done's. */
        expect_wc(cq, done, IBV_WC_SUCCESS, IBV_WC_FETCH_ADD);
        old[done] = buf[done % DEPTH];
        done++;
    }
    if (with_rules)
        rules(id->qp, cq, mr, buf, &t);
    CHECK(rdma_disconnect(id) == 0);
    CHECK(rdma_ack_cm_event(expect(ch, RDMA_CM_EVENT_DISCONNECTED)) == 0);
    rdma_destroy_qp(id);
    CHECK(ibv_dereg_mr(mr) == 0 && rdma_destroy_id(id) == 0 && ibv_destroy_cq(cq) == 0);
    rdma_destroy_event_channel(ch);
    (void)index;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

    return x < y ? -1 : x > y;
}

/* Every old value once: 0 .. CLIENTS * ADDS - 1, whichever client saw it. */
static void check_unique(uint64_t *all, size_t n)
{
    qsort(all, n, sizeof(*all), cmp_u64);
    for (size_t i = 0; i < n; i++)
        if (all[i] != i) {
            fprintf(stderr, "old value %zu of %zu is %llu\n", i, n, (unsigned long long)all[i]);
            exit(1);
        }
}

static struct sockaddr_in parse_addr(const char *ip, const char *port)
{
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(port)) };

    CHECK(inet_pton(AF_INET, ip, &a.sin_addr) == 1);
    return a;
}

/* One side, for runs across namespaces: the server takes CLIENTS connections and checks
 * the count; a client prints its old values, one a line, for the script to check. */
static int one_side(int argc, char **argv)
{
    if (argc == 4 && !strcmp(argv[1], "server")) {
        struct sockaddr_in a = parse_addr(argv[2], argv[3]);

        setvbuf(stdout, NULL, _IOLBF, 0);
        serve(&a, -1, CLIENTS);
        return 0;
    }
    if (argc == 5 && !strcmp(argv[1], "client")) {
        struct sockaddr_in a = parse_addr(argv[2], argv[3]);
        static uint64_t old[ADDS];
        int index = atoi(argv[4]);

        client(&a, index, old, index == 0);
        for (int i = 0; i < ADDS; i++)
            printf("%llu\n", (unsigned long long)old[i]);
        return 0;
    }
    fprintf(stderr, "usage: %s [server ADDR PORT | client ADDR PORT INDEX]\n", argv[0]);
    return 2;
}

int main(int argc, char **argv)
{
    struct sockaddr_in addr = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    pid_t srv, kids[CLIENTS];
    bool mixed = !getenv("ND_TRANSPORT");
    int st;

    if (argc > 1)
        return one_side(argc, argv);
    res = mmap(NULL, sizeof(*res), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    CHECK(res != MAP_FAILED);
    srv = fork_server(server, &addr);
    for (int i = 0; i < CLIENTS; i++) {
        kids[i] = fork();
        CHECK(kids[i] >= 0);
        if (kids[i] == 0) {
            /* With no transport named, half the clients come over iwarp: atomics from
             * both transports meet on one counter. */
            if (mixed && i % 2)
                setenv("ND_TRANSPORT", "iwarp", 1);
            client(&addr, i, res->old[i], i == 0);
            exit(0);
        }
    }
    for (int i = 0; i < CLIENTS; i++)
        CHECK(waitpid(kids[i], &st, 0) == kids[i] && WIFEXITED(st) && WEXITSTATUS(st) == 0);
    CHECK(waitpid(srv, &st, 0) == srv && WIFEXITED(st) && WEXITSTATUS(st) == 0);
    CHECK(res->final == (uint64_t)CLIENTS * ADDS);
    check_unique(&res->old[0][0], (size_t)CLIENTS * ADDS);
    printf("%d processes, %d fetch-and-adds each: count and old values exact\n", CLIENTS, ADDS);
    return 0;
}
