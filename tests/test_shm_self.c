// SPDX-License-Identifier: MIT
/*
 * Two queue pairs of one process connected to each other use shm, also in a process that
 * cannot fetch descriptors from others (a seccomp filter makes pidfd_open and pidfd_getfd
 * fail ENOSYS, as an old kernel or valgrind would): its own descriptors need no fetching.
 * A Send each way lands byte for byte.
 */
#include "t_conn.h"
#include "t_nofetch.h"
#include <netdirect/netdirect.h>
#include "core/qp_int.h"
#include "core/transport.h"

#include <errno.h>
#include <sys/syscall.h>

static void connect_pair(struct t_side s[2])
{
    nd_overlapped gov = { .flags = ND_OV_FLAG_NO_PORT }, cov = { .flags = ND_OV_FLAG_NO_PORT };
    nd_overlapped aov = { .flags = ND_OV_FLAG_NO_PORT }, ccov = { .flags = ND_OV_FLAG_NO_PORT };
    struct sockaddr_in local = t_ipv4("127.0.0.1", 0), addr = local;
    uint32_t len = sizeof(addr);

    CHECK_ST(nd_adapter_create_listener(s[1].a, s[1].port, &s[1].l), ND_SUCCESS);
    CHECK_ST(nd_listener_bind(s[1].l, (struct sockaddr *)&addr, sizeof(addr)), ND_SUCCESS);
    CHECK_ST(nd_listener_listen(s[1].l, 0), ND_SUCCESS);
    CHECK_ST(nd_listener_get_local_address(s[1].l, (struct sockaddr *)&addr, &len), ND_SUCCESS);
    nd_status get = nd_listener_get_connection_request(s[1].l, s[1].c, &gov);
    CHECK_ST(nd_connector_bind(s[0].c, (struct sockaddr *)&local, sizeof(local)), ND_SUCCESS);
    nd_status conn = nd_connector_connect(s[0].c, s[0].qp, (struct sockaddr *)&addr, sizeof(addr), 0, 0, NULL, 0, &cov);
    CHECK_ST(t_wait(get, &gov), ND_SUCCESS);
    nd_status acc = nd_connector_accept(s[1].c, s[1].qp, 0, 0, NULL, 0, &aov);
    CHECK_ST(t_wait(conn, &cov), ND_SUCCESS);
    CHECK_ST(t_wait(nd_connector_complete_connect(s[0].c, &ccov), &ccov), ND_SUCCESS);
    CHECK_ST(t_wait(acc, &aov), ND_SUCCESS);
}

/* @from sends 1000 bytes to @to, which checks them. */
static void send_one(struct t_side *from, struct t_side *to, uint32_t seed)
{
    nd_sge rs = { to->buf, 4096, to->token }, ss = { from->buf, 1000, from->token };
    nd_result r;

    CHECK_ST(nd_qp_receive(to->qp, NULL, &rs, 1), ND_SUCCESS);
    t_fill(from->buf, 1000, seed);
    CHECK_ST(nd_qp_send(from->qp, NULL, &ss, 1, 0), ND_SUCCESS);
    r = t_poll_one(to->cq, 5000);
    CHECK(r.status == ND_SUCCESS && r.request_type == ND_REQUEST_TYPE_RECEIVE && r.bytes_transferred == 1000);
    CHECK(memcmp(to->buf, from->buf, 1000) == 0);
    r = t_poll_one(from->cq, 5000);
    CHECK(r.status == ND_SUCCESS && r.request_type == ND_REQUEST_TYPE_SEND);
}

static int run(bool no_fetch)
{
    struct t_side s[2];

    if (no_fetch)
        t_forbid_fetch(true, ENOSYS);
    t_side_open(&s[0], 4096, 4, 1);
    t_side_open(&s[1], 4096, 4, 1);
    connect_pair(s);
    for (int i = 0; i < 2; i++)
        CHECK(s[i].qp->tops && strcmp(s[i].qp->tops->name, "shm") == 0);
    send_one(&s[0], &s[1], 1);
    send_one(&s[1], &s[0], 2);
    t_side_close(&s[0]);
    t_side_close(&s[1]);
    return 0;
}

int main(void)
{
    const char *t = getenv("ND_TRANSPORT");

    if (t && strcmp(t, "shm") != 0)
        return T_SKIP;
    for (int no_fetch = 0; no_fetch < 2; no_fetch++) {
        pid_t pid = fork();
        CHECK(pid >= 0);
        if (pid == 0)
            _exit(run(no_fetch));
        t_expect_child_ok(pid);
        printf("%s: two queue pairs of one process connect over shm\n",
               no_fetch ? "pidfd_getfd refused" : "unrestricted");
    }
    return 0;
}
