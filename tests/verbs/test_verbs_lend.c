// SPDX-License-Identifier: MIT
/*
 * A program that spins on the CQ of an idle QP while a peer streams RDMA Writes into
 * another QP nobody polls (perftest's server does this: it waits on its handshake QP).
 * Every Write must land, in order, and over iwarp the spinner must lend its empty polls
 * to the connection the engine thread serves, which then takes the stream's bytes. How
 * many system calls the engine thread makes meanwhile depends on scheduling: it is
 * printed (counted with the kernel's syscall tracepoint, where perf events are allowed)
 * for bench/lend_syscalls.sh, which reports it as a figure; the test checks the data.
 * Runs on the transport ND_TRANSPORT picks; shm has no engine.
 */
#include "cm_test.h"
#include "../../tools/nd_syscount.h"

#include <dirent.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#define WRITE_LEN (1u << 20)
#define DEPTH 8
#define WRITES 256                  /* the last DEPTH of them from a second source */
#define BUF_LEN (WRITE_LEN * DEPTH)

struct target {
    uint64_t addr;
    uint32_t rkey;
};

/* The thread id of this process's iwarp engine, or 0 without one. */
static pid_t engine_tid(void)
{
    DIR *d = opendir("/proc/self/task");
    struct dirent *t;
    pid_t tid = 0;

    CHECK(d);
    while ((t = readdir(d)) && !tid) {
        char path[300], comm[32];
        FILE *f;

        snprintf(path, sizeof(path), "/proc/self/task/%s/comm", t->d_name);
        if (!(f = fopen(path, "r")))
            continue;
        if (fgets(comm, sizeof(comm), f) && !strncmp(comm, "nd-iwarp", 8))
            tid = (pid_t)atoi(t->d_name);
        fclose(f);
    }
    closedir(d);
    return tid;
}

/* The next connection request on @lch, its id moved to a channel of its own (@own): the
 * client's second request may come before the first connection's ESTABLISHED. Its QP is
 * created on a CQ of its own (*@cq). */
static struct rdma_cm_id *take_request(struct rdma_event_channel *lch, struct rdma_event_channel **own, struct ibv_cq **cq)
{
    struct rdma_cm_event *ev = expect(lch, RDMA_CM_EVENT_CONNECT_REQUEST);
    struct ibv_qp_init_attr qa = { .qp_type = IBV_QPT_RC,
                                   .cap = { .max_send_wr = 2, .max_recv_wr = 2, .max_send_sge = 1, .max_recv_sge = 1 } };
    struct rdma_cm_id *c = ev->id;

    CHECK(rdma_ack_cm_event(ev) == 0);
    CHECK((*own = rdma_create_event_channel()) && rdma_migrate_id(c, *own) == 0);
    *cq = cm_create_qp_with_cq(c, &qa);
    return c;
}

/* Accept @c, sending @pd_len bytes of @pd as private data, and take its ESTABLISHED. */
static void accept_on(struct rdma_cm_id *c, struct rdma_event_channel *own, const void *pd, uint8_t pd_len)
{
    struct rdma_conn_param cp = { .private_data = pd, .private_data_len = pd_len, .responder_resources = 1 };

    CHECK(rdma_accept(c, &cp) == 0);
    CHECK(rdma_ack_cm_event(expect(own, RDMA_CM_EVENT_ESTABLISHED)) == 0);
}

/* Spin on @idle_cq, which must stay empty, until @ch has an event (the client's disconnect). */
static void spin_until_event(struct ibv_cq *idle_cq, struct rdma_event_channel *ch)
{
    struct pollfd p = { .fd = ch->fd, .events = POLLIN };
    struct ibv_wc wc;

    for (uint64_t i = 1;; i++) {
        CHECK(ibv_poll_cq(idle_cq, 1, &wc) == 0);
        if (!(i & 1023) && poll(&p, 1, 0) == 1)
            return;
    }
}

static void server(struct sockaddr_in *addr, int ready)
{
    struct rdma_event_channel *ch = rdma_create_event_channel(), *ich, *dch;
    uint8_t *buf = calloc(1, BUF_LEN);
    struct rdma_cm_id *l, *idle, *data;
    struct ibv_cq *idle_cq, *data_cq;
    struct ibv_mr *mr;
    pid_t engine;
    int counter = -1;
    long long calls;

    CHECK(ch && buf && rdma_create_id(ch, &l, NULL, RDMA_PS_TCP) == 0);
    CHECK(rdma_bind_addr(l, (struct sockaddr *)addr) == 0 && rdma_listen(l, 2) == 0);
    CHECK(write(ready, &((struct sockaddr_in *)rdma_get_local_addr(l))->sin_port, 2) == 2);
    idle = take_request(ch, &ich, &idle_cq);
    accept_on(idle, ich, NULL, 0);
    data = take_request(ch, &dch, &data_cq);
    CHECK((mr = ibv_reg_mr(data->pd, buf, BUF_LEN, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE)));
    struct target t = { (uintptr_t)buf, mr->rkey };
    accept_on(data, dch, &t, sizeof(t));
    if ((engine = engine_tid()))
        counter = tool_counter_start_of(engine);
    spin_until_event(idle_cq, dch);
    calls = tool_counter_stop(counter);
    CHECK(rdma_ack_cm_event(expect(dch, RDMA_CM_EVENT_DISCONNECTED)) == 0);
    for (uint32_t i = 0; i < BUF_LEN; i++)
        if (buf[i] != 2) {
            fprintf(stderr, "byte %u is %u, the last Writes wrote 2\n", i, buf[i]);
            exit(1);
        }
    if (engine && calls >= 0) {
        printf("engine_syscalls %lld writes %u\n", calls, WRITES);
        fflush(stdout);
    }
    rdma_destroy_qp(data);
    rdma_destroy_qp(idle);
    CHECK(ibv_dereg_mr(mr) == 0 && ibv_destroy_cq(data_cq) == 0 && ibv_destroy_cq(idle_cq) == 0);
    CHECK(rdma_destroy_id(data) == 0 && rdma_destroy_id(idle) == 0 && rdma_destroy_id(l) == 0);
    rdma_destroy_event_channel(ch);
    rdma_destroy_event_channel(ich);
    rdma_destroy_event_channel(dch);
    free(buf);
    exit(0);
}

/* Connect a new id (on a channel of its own, @ch) towards @addr with a QP on a CQ of its own;
 * the server's private data to @t unless NULL. */
static struct rdma_cm_id *connect_one(struct sockaddr_in *addr, struct ibv_qp_init_attr *qa, struct target *t,
                                      struct rdma_event_channel **ch, struct ibv_cq **cq)
{
    struct rdma_cm_id *id = cm_client_resolved(ch, addr);
    struct rdma_conn_param cp = { .initiator_depth = 1, .responder_resources = 1 };
    struct rdma_cm_event *ev;

    *cq = cm_create_qp_with_cq(id, qa);
    CHECK(rdma_connect(id, &cp) == 0);
    ev = expect(*ch, RDMA_CM_EVENT_ESTABLISHED);
    if (t) {
        CHECK(ev->param.conn.private_data_len >= sizeof(*t));
        memcpy(t, ev->param.conn.private_data, sizeof(*t));
    }
    CHECK(rdma_ack_cm_event(ev) == 0);
    return id;
}

int main(void)
{
    struct sockaddr_in addr = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    struct ibv_qp_init_attr qa = { .cap = { .max_send_wr = DEPTH, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1 },
                                   .qp_type = IBV_QPT_RC };
    pid_t pid = fork_server(server, &addr);
    struct rdma_event_channel *ich, *dch;
    struct ibv_cq *icq, *dcq;
    struct rdma_cm_id *idle = connect_one(&addr, &qa, NULL, &ich, &icq);
    struct target t;
    struct rdma_cm_id *data = connect_one(&addr, &qa, &t, &dch, &dcq);
    uint8_t *src = malloc(2 * BUF_LEN);
    struct ibv_mr *mr;
    int st;

    /* The first source holds 1s, the second 2s: the target ends all 2s, its last Writes'. */
    CHECK(src && (mr = ibv_reg_mr(data->pd, src, 2 * BUF_LEN, IBV_ACCESS_LOCAL_WRITE)));
    memset(src, 1, BUF_LEN);
    memset(src + BUF_LEN, 2, BUF_LEN);
    for (uint32_t posted = 0, done = 0; done < WRITES; done++) {
        for (; posted < WRITES && posted - done < DEPTH; posted++) {
            uint64_t off = (uint64_t)(posted % DEPTH) * WRITE_LEN;
            struct ibv_sge sge = { (uintptr_t)src + (posted >= WRITES - DEPTH ? BUF_LEN : 0) + off, WRITE_LEN, mr->lkey };
            struct ibv_send_wr wr = { .wr_id = posted, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE,
                                      .send_flags = IBV_SEND_SIGNALED, .wr.rdma = { t.addr + off, t.rkey } }, *bad;
            CHECK(ibv_post_send(data->qp, &wr, &bad) == 0);
        }
        struct ibv_wc wc = cm_poll_one(dcq);

        CHECK(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RDMA_WRITE && wc.wr_id == done);
    }
    CHECK(rdma_disconnect(data) == 0);
    CHECK(rdma_ack_cm_event(expect(dch, RDMA_CM_EVENT_DISCONNECTED)) == 0);
    CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
    CHECK(ibv_dereg_mr(mr) == 0);
    for (int i = 0; i < 2; i++) {
        struct rdma_cm_id *id = i ? data : idle;
        struct ibv_cq *cq = i ? dcq : icq;

        rdma_destroy_qp(id);
        CHECK(rdma_destroy_id(id) == 0 && ibv_destroy_cq(cq) == 0);
    }
    rdma_destroy_event_channel(ich);
    rdma_destroy_event_channel(dch);
    free(src);
    puts("lend ok");
    return 0;
}
