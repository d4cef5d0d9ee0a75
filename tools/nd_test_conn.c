// SPDX-License-Identifier: MIT
/*
 * nd_test's connection cases: ndmemorytest's connector/listener tests and
 * ndmpic, MS-MPI's connection pattern with crossing connects (winverbs-lessons §10).
 */
#include "nd_test.h"
#include "nd_tool.h"

#include <pthread.h>

enum { SMALL = 4096 };

static void listen_closing_server(struct nt *t)
{
    nd_listener *l;
    uint16_t port = nt_listen_any(t, t->port, &l);

    nt_expect(t, "Listener close", nd_listener_close(l), ND_SUCCESS);
    nt_announce(t, port);
    nt_ctl_barrier(t);
}

static void listen_closing_client(struct nt *t)
{
    struct nt_ep e;

    nt_ep_open_small(t, &e);
    nt_expect(t, "Connect to the closed listener", nt_ep_connect(t, &e, NULL, 0), ND_CONNECTION_REFUSED);
    nt_ctl_barrier(t);
    nt_ep_close(t, &e);
}

/* The passive side's Accept is refused: the client rejects (NdConnReject) or abandons
 * (NdDualConnection) the connection its Connect completed. */
static void accept_refused_server(struct nt *t)
{
    struct nt_ep e;

    nt_ep_open_small(t, &e);
    nt_ep_take(t, &e);
    nt_expect(t, "Accept", nt_ep_accept(t, &e), ND_CONNECTION_REFUSED);
    nt_ctl_barrier(t);
    nt_ep_close(t, &e);
}

static void conn_reject_client(struct nt *t)
{
    nd_overlapped ov = { .flags = ND_OV_FLAG_NO_PORT };
    struct nt_ep e;

    nt_ep_open_small(t, &e);
    nt_expect(t, "Connect", nt_ep_connect(t, &e, NULL, 0), ND_SUCCESS);
    nt_expect(t, "Reject after Connect completed", nd_connector_reject(e.conn, NULL, 0), ND_SUCCESS);
    nt_expect(t, "CompleteConnect after Reject", nt_wait(nd_connector_complete_connect(e.conn, &ov), &ov),
              ND_CONNECTION_ABORTED);
    nt_ctl_barrier(t);
    nt_ep_close(t, &e);
}

static void dual_connection_client(struct nt *t)
{
    struct sockaddr_in again = t->addr;
    nd_overlapped ov = { .flags = ND_OV_FLAG_NO_PORT };
    struct nt_ep e;

    nt_ep_open_small(t, &e);
    nt_expect(t, "Connect", nt_ep_connect(t, &e, NULL, 0), ND_SUCCESS);
    again.sin_addr = t->my_ip;
    again.sin_port = 0;
    nt_expect(t, "second Bind", nd_connector_bind(e.conn, (struct sockaddr *)&again, sizeof(again)),
              STATUS_ADDRESS_ALREADY_ASSOCIATED);
    again = nt_server_addr(t, e.port);
    nt_expect(t, "second Connect",
              nt_wait(nd_connector_connect(e.conn, e.qp, (struct sockaddr *)&again, sizeof(again), 0, 0, NULL, 0,
                                           &ov), &ov), ND_CONNECTION_ACTIVE);
    /* Closing the connector without CompleteConnect abandons the connection. */
    nt_expect(t, "close the connector", nd_connector_close(e.conn), ND_SUCCESS);
    e.conn = NULL;
    nt_ctl_barrier(t);
    nt_ep_close(t, &e);
}

static void dual_listen_server(struct nt *t)
{
    nd_listener *l1, *l2;
    struct sockaddr_in sin = t->addr;

    sin.sin_port = htons(nt_listen_any(t, t->port, &l1));
    NT_SETUP(t, nd_adapter_create_listener(t->adapter, t->port, &l2));
    nt_expect(t, "second listener Bind, same address and port",
              nd_listener_bind(l2, (struct sockaddr *)&sin, sizeof(sin)), STATUS_ADDRESS_ALREADY_ASSOCIATED);
    nd_listener_close(l2);
    nd_listener_close(l1);
}

static void invalid_ip_client(struct nt *t)
{
    struct sockaddr_in local = t->addr, zero = t->addr;
    nd_overlapped ov = { .flags = ND_OV_FLAG_NO_PORT };
    struct nt_ep e;

    nt_ep_open_small(t, &e);
    local.sin_addr = t->my_ip;
    local.sin_port = 0;
    NT_SETUP(t, nd_connector_bind(e.conn, (struct sockaddr *)&local, sizeof(local)));
    zero.sin_addr.s_addr = htonl(INADDR_ANY);
    nt_expect(t, "Connect to 0.0.0.0",
              nt_wait(nd_connector_connect(e.conn, e.qp, (struct sockaddr *)&zero, sizeof(zero), 0, 0, NULL, 0, &ov),
                      &ov), STATUS_BAD_NETWORK_NAME);
    nt_ep_close(t, &e);
}

static void fill(uint8_t *p, size_t n, uint8_t seed)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)(seed + i * 7);
}

static bool filled(const uint8_t *p, size_t n, uint8_t seed)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != (uint8_t)(seed + i * 7))
            return false;
    return true;
}

static void large_pdata_server(struct nt *t)
{
    nd_overlapped ov = { .flags = ND_OV_FLAG_NO_PORT };
    uint32_t max = t->info.max_callee_data, len = 0;
    uint8_t pd[1024], got[1024];
    struct nt_ep e;

    nt_ep_open_small(t, &e);
    NT_SETUP(t, nt_post_recv(&e, NULL, 0, 0));
    nt_ep_take(t, &e);
    nt_expect(t, "GetPrivateData size probe", nd_connector_get_private_data(e.conn, NULL, &len), ND_BUFFER_OVERFLOW);
    nt_check(t, "the caller's private data is MaxCallerData bytes", len == t->info.max_caller_data, NULL);
    len = sizeof(got);
    nt_expect(t, "GetPrivateData", nd_connector_get_private_data(e.conn, got, &len), ND_SUCCESS);
    nt_check(t, "the caller's private data arrived intact", len <= sizeof(got) && filled(got, len, 1), NULL);
    fill(pd, sizeof(pd), 2);
    nt_expect(t, "Accept with MaxCalleeData + 1 bytes",
              nt_wait(nd_connector_accept(e.conn, e.qp, 1, 1, pd, max + 1, &ov), &ov), ND_INVALID_BUFFER_SIZE);
    nt_expect(t, "Accept with MaxCalleeData bytes",
              nt_wait(nd_connector_accept(e.conn, e.qp, 1, 1, pd, max, &ov), &ov), ND_SUCCESS);
    nt_step("the client's Send");
    nd_result r = nt_next(e.cq, 10000);
    nt_expect(t, "the pre-posted receive", r.status, ND_SUCCESS);
    nt_ctl_barrier(t);
    nt_ep_close(t, &e);
}

static void large_pdata_client(struct nt *t)
{
    nd_overlapped ov = { .flags = ND_OV_FLAG_NO_PORT };
    uint32_t max = t->info.max_caller_data, len;
    uint8_t pd[1024], got[1024];
    struct nt_ep e;

    nt_ep_open_small(t, &e);
    fill(pd, sizeof(pd), 1);
    nt_expect(t, "Connect with MaxCallerData + 1 bytes", nt_ep_connect(t, &e, pd, max + 1), ND_INVALID_BUFFER_SIZE);
    nt_expect(t, "Connect with MaxCallerData bytes", nt_ep_connect(t, &e, pd, max), ND_SUCCESS);
    len = sizeof(got);
    nt_expect(t, "GetPrivateData", nd_connector_get_private_data(e.conn, got, &len), ND_SUCCESS);
    nt_check(t, "the callee's private data is MaxCalleeData bytes, intact",
             len == t->info.max_callee_data && filled(got, len, 2), NULL);
    nt_expect(t, "CompleteConnect", nt_wait(nd_connector_complete_connect(e.conn, &ov), &ov), ND_SUCCESS);
    NT_SETUP(t, nt_post_send(&e, NULL, 0, 0, 0));
    nt_step("the Send's completion");
    nt_expect(t, "Send", nt_next(e.cq, 10000).status, ND_SUCCESS);
    nt_ctl_barrier(t);
    nt_ep_close(t, &e);
}

static void recv_conn_closed_server(struct nt *t)
{
    struct nt_ep e;

    nt_ep_open_small(t, &e);
    NT_SETUP(t, nt_post_recv(&e, (void *)0x77, 0, SMALL));
    nt_ep_take(t, &e);
    nt_expect(t, "Accept", nt_ep_accept(t, &e), ND_SUCCESS);
    nt_step("the flushed receive");
    nd_result r = nt_next(e.cq, 10000);
    nt_expect(t, "posted receive after the peer closed", r.status, ND_CANCELED);
    nt_check(t, "the flushed receive carries its type and contexts",
             r.request_type == ND_REQUEST_TYPE_RECEIVE && r.request_context == (void *)0x77 && r.qp_context == &e,
             NULL);
    nt_ctl_barrier(t);
    nt_ep_close(t, &e);
}

static void recv_conn_closed_client(struct nt *t)
{
    struct nt_ep e;

    nt_ep_open_small(t, &e);
    nt_ep_connect_complete(t, &e);
    nt_ep_close(t, &e);     /* at once: closing a connected connector disconnects */
    nt_ctl_barrier(t);
}

/* ---- ndmpic ---- */

enum { RANKS = 4, KEY_LEN = 37 };

struct mpic_pdata {
    uint32_t rank;
    char key[KEY_LEN];
};

/* Who connects to whom (ndmpic's pattern): 0-1 and 2-3 one-sided, 0-3 and 1-2 crossing. */
static bool mpic_connects(unsigned from, unsigned to)
{
    static const bool table[RANKS][RANKS] = {
        { false, true, false, true }, { false, false, true, false },
        { false, true, false, false }, { true, false, true, false } };

    return table[from][to];
}

struct mpic_link {
    unsigned peer;
    nd_connector *conn;
    nd_qp *qp;
    nd_overlapped ov;
    bool up;
    uint32_t msg[2];    /* [0] received, [1] sent */
};

struct mpic_rank {
    struct nt *t;
    unsigned id;
    nd_port *port;
    nd_cq *cq;
    nd_mr *mr;
    nd_listener *listener;
    struct mpic_link out[RANKS];                /* our Connects, by peer rank */
    struct mpic_link in[RANKS];                 /* requests taken, in arrival order */
    unsigned taken;
    nd_overlapped gov;
    unsigned requests_left, pending, links;
    nd_overlapped *ready[8];                    /* requests that finished without pending */
    unsigned nready;
    pthread_barrier_t *barrier;
    uint16_t *ports;                            /* every rank's listener, shared */
};

static const char mpic_key[KEY_LEN] = "netdirect ndmpic job key 0123456789a";

static struct sockaddr_in mpic_addr(const struct mpic_rank *r, unsigned rank)
{
    struct sockaddr_in sin = nt_server_addr(r->t, r->ports[rank]);
    bool on_server = rank % 2 == 1;

    sin.sin_addr = on_server == r->t->server ? r->t->my_ip : r->t->peer_ip;
    return sin;
}

static void mpic_link_open(struct mpic_rank *r, struct mpic_link *l, unsigned peer)
{
    nd_sge sge = { &l->msg[0], sizeof(l->msg[0]), nd_mr_get_local_token(r->mr) };

    l->peer = peer;
    NT_SETUP(r->t, nd_adapter_create_connector(r->t->adapter, r->port, &l->conn));
    NT_SETUP(r->t, nd_adapter_create_queue_pair(r->t->adapter, r->cq, r->cq, l, 2, 2, 1, 1, 0, &l->qp));
    /* The receive goes up before the connection: the peer may send the moment it is up. */
    NT_SETUP(r->t, nd_qp_receive(l->qp, l, &sge, 1));
    l->ov.user_context = l;
}

/* Only ND_PENDING requests complete through the port; the rest are handled as if they had. */
static void mpic_issued(struct mpic_rank *r, nd_overlapped *ov, nd_status st)
{
    r->pending++;
    if (st == ND_PENDING)
        return;
    ov->status = st;
    if (r->nready == sizeof(r->ready) / sizeof(r->ready[0]))
        nt_abort(r->t, "ndmpic's ready list", ND_INSUFFICIENT_RESOURCES);
    r->ready[r->nready++] = ov;
}

static void mpic_take_request(struct mpic_rank *r)
{
    if (!r->requests_left)
        return;
    r->requests_left--;
    mpic_link_open(r, &r->in[r->taken], RANKS);
    mpic_issued(r, &r->gov, nd_listener_get_connection_request(r->listener, r->in[r->taken].conn, &r->gov));
}

/* The link that carries our traffic with @peer, if any. */
static struct mpic_link *mpic_link_to(struct mpic_rank *r, unsigned peer)
{
    if (r->out[peer].up)
        return &r->out[peer];
    for (unsigned i = 0; i < r->taken; i++)
        if (r->in[i].up && r->in[i].peer == peer)
            return &r->in[i];
    return NULL;
}

/* A request arrived: accept it, unless it crosses our own Connect and we rank higher. */
static void mpic_on_request(struct mpic_rank *r)
{
    struct mpic_link *l = &r->in[r->taken++];
    struct mpic_pdata pd;
    uint32_t len = sizeof(pd);
    char step[96];

    nt_expect(r->t, "ndmpic GetConnectionRequest", r->gov.status, ND_SUCCESS);
    NT_SETUP(r->t, nd_connector_get_private_data(l->conn, &pd, &len));
    bool ok = len == sizeof(pd) && pd.rank < RANKS && memcmp(pd.key, mpic_key, KEY_LEN) == 0;
    snprintf(step, sizeof(step), "rank %u: a request whose private data names rank %u and the job key", r->id,
             pd.rank);
    if (!nt_check(r->t, step, ok && mpic_connects(pd.rank, r->id), NULL))
        return;
    l->peer = pd.rank;
    if (mpic_connects(r->id, pd.rank) && r->id > pd.rank) {
        snprintf(step, sizeof(step), "rank %u: Reject the crossing request of rank %u", r->id, pd.rank);
        nt_expect(r->t, step, nd_connector_reject(l->conn, NULL, 0), ND_SUCCESS);
    } else {
        mpic_issued(r, &l->ov, nd_connector_accept(l->conn, l->qp, 0, 0, NULL, 0, &l->ov));
    }
    mpic_take_request(r);
}

static void mpic_on_link(struct mpic_rank *r, struct mpic_link *l)
{
    bool active = l == &r->out[l->peer];
    char step[96];

    if (active && l->ov.status == ND_SUCCESS && !l->up) {
        l->up = true;       /* Connect done: CompleteConnect next (same overlapped) */
        mpic_issued(r, &l->ov, nd_connector_complete_connect(l->conn, &l->ov));
        return;
    }
    if (active && l->ov.status != ND_SUCCESS) {
        bool crossing_loser = mpic_connects(l->peer, r->id) && l->peer > r->id;

        snprintf(step, sizeof(step), "rank %u: Connect to rank %u%s", r->id, l->peer,
                 crossing_loser ? ", which crossed a Connect of the higher rank" : "");
        nt_expect(r->t, step, l->ov.status, crossing_loser ? ND_CONNECTION_REFUSED : ND_SUCCESS);
        l->up = false;
        return;
    }
    snprintf(step, sizeof(step), "rank %u: connected to rank %u (%s)", r->id, l->peer, active ? "active" : "passive");
    l->up = nt_expect(r->t, step, l->ov.status, ND_SUCCESS);
    r->links += l->up;
}

static void mpic_connect_all(struct mpic_rank *r)
{
    struct sockaddr_in local = mpic_addr(r, r->id);
    struct mpic_pdata pd = { .rank = r->id };

    memcpy(pd.key, mpic_key, KEY_LEN);
    local.sin_port = 0;
    for (unsigned p = 0; p < RANKS; p++) {
        if (!mpic_connects(r->id, p))
            continue;
        struct mpic_link *l = &r->out[p];
        struct sockaddr_in dest = mpic_addr(r, p);

        mpic_link_open(r, l, p);
        NT_SETUP(r->t, nd_connector_bind(l->conn, (struct sockaddr *)&local, sizeof(local)));
        mpic_issued(r, &l->ov, nd_connector_connect(l->conn, l->qp, (struct sockaddr *)&dest, sizeof(dest), 0, 0,
                                                    &pd, sizeof(pd), &l->ov));
    }
}

/* Run the rank's requests to completion through its port, then one message each way per link. */
static void mpic_run(struct mpic_rank *r)
{
    nd_overlapped *ov;

    for (unsigned p = 0; p < RANKS; p++)
        r->requests_left += mpic_connects(p, r->id);
    mpic_take_request(r);
    mpic_connect_all(r);
    while (r->pending) {
        if (r->nready)
            ov = r->ready[--r->nready];
        else
            NT_SETUP(r->t, nd_port_wait(r->port, ND_INFINITE, &ov));
        r->pending--;
        if (ov == &r->gov)
            mpic_on_request(r);
        else
            mpic_on_link(r, ov->user_context);
    }
    nt_check(r->t, "every rank holds two connections", r->links == 2, NULL);
    unsigned sends = 0, recvs = 0;
    for (unsigned p = 0; p < RANKS; p++) {
        struct mpic_link *l = mpic_link_to(r, p);
        nd_sge sge = { l ? &l->msg[1] : NULL, sizeof(uint32_t), nd_mr_get_local_token(r->mr) };

        if (!l)
            continue;
        l->msg[1] = r->id;
        NT_SETUP(r->t, nd_qp_send(l->qp, NULL, &sge, 1, 0));
        sends++;
    }
    while (sends + recvs < 2 * r->links) {
        nd_result res = nt_next(r->cq, 10000);

        if (!nt_expect(r->t, "ndmpic message", res.status, ND_SUCCESS))
            break;
        if (res.request_type == ND_REQUEST_TYPE_SEND) {
            sends++;
            continue;
        }
        struct mpic_link *l = res.qp_context;
        nt_check(r->t, "a message from the rank the link was made with", l->msg[0] == l->peer, NULL);
        recvs++;
    }
}

static void *mpic_rank_main(void *arg)
{
    struct mpic_rank *r = arg;
    nd_overlapped ov = { .flags = ND_OV_FLAG_NO_PORT };

    NT_SETUP(r->t, nd_port_create(&r->port));
    NT_SETUP(r->t, nd_adapter_create_completion_queue(r->t->adapter, r->port, 32, 0, 0, &r->cq));
    NT_SETUP(r->t, nd_adapter_create_memory_region(r->t->adapter, r->port, &r->mr));
    NT_SETUP(r->t, nt_wait(nd_mr_register(r->mr, r, sizeof(*r), ND_MR_FLAG_ALLOW_LOCAL_WRITE, &ov), &ov));
    r->ports[r->id] = nt_listen_any(r->t, r->port, &r->listener);
    pthread_barrier_wait(r->barrier);   /* every rank listens ... */
    pthread_barrier_wait(r->barrier);   /* ... on both sides and knows the others' ports */
    mpic_run(r);
    pthread_barrier_wait(r->barrier);   /* everyone has its messages ... */
    pthread_barrier_wait(r->barrier);   /* ... before anyone disconnects */
    for (unsigned i = 0; i < 2 * RANKS; i++) {
        struct mpic_link *l = i < RANKS ? &r->out[i] : &r->in[i - RANKS];

        if (l->up)
                nt_expect(r->t, "ndmpic Disconnect", nt_wait(nd_connector_disconnect(l->conn, &ov), &ov),
                          ND_SUCCESS);
        if (l->conn)
            nd_connector_close(l->conn);
        if (l->qp)
            nd_qp_close(l->qp);
    }
    nd_listener_close(r->listener);
    nt_wait(nd_mr_deregister(r->mr, &ov), &ov);
    nd_mr_close(r->mr);
    nd_cq_close(r->cq);
    nd_port_close(r->port);
    return NULL;
}

/* Two ranks per process (client 0 and 2, server 1 and 3), each in its own thread. */
static void mpic_side(struct nt *t)
{
    struct mpic_rank ranks[2];
    uint16_t ports[RANKS] = { 0 };
    pthread_barrier_t barrier;
    pthread_t th[2];

    pthread_barrier_init(&barrier, NULL, 3);
    for (unsigned i = 0; i < 2; i++) {
        memset(&ranks[i], 0, sizeof(ranks[i]));
        ranks[i].t = t;
        ranks[i].id = 2 * i + (t->server ? 1 : 0);
        ranks[i].barrier = &barrier;
        ranks[i].ports = ports;
        if (pthread_create(&th[i], NULL, mpic_rank_main, &ranks[i]) != 0)
            nt_abort(t, "pthread_create", ND_INSUFFICIENT_RESOURCES);
    }
    pthread_barrier_wait(&barrier);
    unsigned mine = t->server ? 1 : 0;
    for (unsigned r = mine; r < RANKS; r += 2)
        nt_ctl_send(t, ports[r]);
    for (unsigned r = !mine; r < RANKS; r += 2)
        ports[r] = (uint16_t)nt_ctl_recv(t);
    pthread_barrier_wait(&barrier);
    pthread_barrier_wait(&barrier);     /* the ranks have their messages: wait for the far side */
    nt_ctl_barrier(t);
    pthread_barrier_wait(&barrier);
    for (unsigned i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    pthread_barrier_destroy(&barrier);
}

const struct nt_case nt_conn_cases[] = {
    { "NdConnListenClosing", "Connect to a listener that was closed: ND_CONNECTION_REFUSED",
      listen_closing_server, listen_closing_client },
    { "NdConnReject", "the client Rejects after its Connect completed: the server's Accept is refused",
      accept_refused_server, conn_reject_client },
    { "NdDualConnection", "Bind twice, Connect while connected, abandon: Accept refused",
      accept_refused_server, dual_connection_client },
    { "NdDualListen", "a second listener on the same address and port", dual_listen_server, NULL },
    { "NdInvalidIP", "Connect to 0.0.0.0: STATUS_BAD_NETWORK_NAME", NULL, invalid_ip_client },
    { "NdLargePrivateData", "private data of Max + 1 then Max bytes, Connect and Accept",
      large_pdata_server, large_pdata_client },
    { "NdReceiveConnClosed", "the peer closes at once: the posted receive flushes ND_CANCELED",
      recv_conn_closed_server, recv_conn_closed_client },
    { "ndmpic", "four ranks in two processes, two crossing connects resolved by rank", mpic_side, mpic_side },
};
const unsigned nt_conn_case_count = sizeof(nt_conn_cases) / sizeof(nt_conn_cases[0]);
