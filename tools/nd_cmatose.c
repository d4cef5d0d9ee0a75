// SPDX-License-Identifier: MIT
/*
 * nd_cmatose: ucmatose's exchange (rdma-core's librdmacm/examples/cmatose.c) on the ND
 * API, so that either side can be rdma-core's ucmatose over a kernel RNIC. Both sides post
 * -C receives of -S bytes before connecting. The server Sends -C messages as soon as the
 * connection is up, waits for their completions and for the client's -C messages, then
 * disconnects; the client waits for the server's messages, Sends its own, and waits for
 * their completions and the server's disconnect. Every Send must complete successfully
 * and every message arrive whole.
 *   nd_cmatose -s <ip>[:port] [-C count] [-S size]
 *   nd_cmatose -c <ip>[:port] [-C count] [-S size]
 * The default port is ucmatose's, 7471; the defaults 10 messages of 100 bytes are too.
 */
#include "nd_tool.h"

#define DEFAULT_PORT 7471

struct opts {
    uint32_t count, size;
};

static void post_receives(struct tool_ep *e, const struct opts *o)
{
    for (uint32_t i = 0; i < o->count; i++) {
        nd_sge s = { (uint8_t *)e->buf + (size_t)(i + 1) * o->size, o->size, e->token };

        TOOL_CHECK(nd_qp_receive(e->qp, NULL, &s, 1));
    }
}

static void post_sends(struct tool_ep *e, const struct opts *o)
{
    nd_sge s = { e->buf, o->size, e->token };

    memset(e->buf, 0x5a, o->size);
    for (uint32_t i = 0; i < o->count; i++)
        TOOL_CHECK(nd_qp_send(e->qp, NULL, &s, 1, 0));
}

/* Wait for @sends Send and @recvs receive completions, every one a success. */
static void complete(struct tool_ep *e, const struct opts *o, uint32_t sends, uint32_t recvs)
{
    while (sends || recvs) {
        nd_result r = tool_next_any(e);

        if (r.status != ND_SUCCESS)
            TOOL_DIE("%s completed %s", r.request_type == ND_REQUEST_TYPE_SEND ? "a Send" : "a receive",
                     nd_strerror(r.status));
        if (r.request_type == ND_REQUEST_TYPE_SEND) {
            if (!sends--)
                TOOL_DIE("more Send completions than Sends");
        } else if (r.request_type == ND_REQUEST_TYPE_RECEIVE) {
            if (!recvs--)
                TOOL_DIE("more receives than messages");
            if (r.bytes_transferred != o->size)
                TOOL_DIE("a message of %u bytes, expected %u", r.bytes_transferred, o->size);
        }
    }
}

static void wait_disconnect(struct tool_ep *e)
{
    nd_overlapped ov = { .flags = ND_OV_FLAG_NO_PORT };

    TOOL_CHECK(tool_wait(nd_connector_notify_disconnect(e->conn, &ov), &ov));
}

static void open_ep(struct tool_ep *e, const struct sockaddr_in *addr, const struct opts *o)
{
    e->blocking = true;             /* leave the CPU to the peer (often an emulated VM) */
    tool_open(e, addr, (size_t)(o->count + 1) * o->size, o->count + 1, 1);
}

int main(int argc, char **argv)
{
    struct opts o = { .count = 10, .size = 100 };
    struct sockaddr_in addr;
    struct tool_ep e = { 0 };
    const char *srv = NULL, *cli = NULL;
    int opt;

    while ((opt = getopt(argc, argv, "s:c:C:S:")) != -1) {
        switch (opt) {
        case 's': srv = optarg; break;
        case 'c': cli = optarg; break;
        case 'C': o.count = (uint32_t)strtoul(optarg, NULL, 0); break;
        case 'S': o.size = (uint32_t)strtoul(optarg, NULL, 0); break;
        default: goto usage;
        }
    }
    if (!!srv == !!cli || !o.count || o.count > 4096 || !o.size || o.size > (64u << 20) ||
        !tool_parse_addr(srv ? srv : cli, DEFAULT_PORT, &addr))
        goto usage;
    open_ep(&e, &addr, &o);
    post_receives(&e, &o);
    if (srv) {
        tool_accept(&e, &addr, NULL, 0);
        post_sends(&e, &o);
        complete(&e, &o, o.count, o.count);
        printf("server: %u messages of %u bytes each way\n", o.count, o.size);
    } else {
        tool_connect(&e, &addr, NULL, NULL);
        complete(&e, &o, 0, o.count);
        post_sends(&e, &o);
        complete(&e, &o, o.count, 0);
        wait_disconnect(&e);
        printf("client: %u messages of %u bytes each way\n", o.count, o.size);
    }
    tool_close(&e);
    return 0;
usage:
    fprintf(stderr, "usage: nd_cmatose -s <ip>[:port] | -c <ip>[:port] [-C count] [-S size]\n");
    return 2;
}
