// SPDX-License-Identifier: MIT
/*
 * nd_rping_compat: rping's protocol (rdma-core's librdmacm/examples/rping.c) on the ND
 * API, so that either side can be rdma-core's rping over a kernel RNIC (siw, an iWARP NIC).
 * Each ping: the client Sends the address, token and size of its start buffer; the server
 * Reads it, Sends a go-ahead; the client Sends its sink buffer; the server Writes what it
 * read there and Sends a go-ahead; with -V the client compares the two buffers.
 *   nd_rping_compat -s <ip>[:port]                      server (until the client leaves)
 *   nd_rping_compat -c <ip>[:port] [-C count] [-S size] [-V] [-v]
 * The default port is rping's, 7174. Exit status 0 when every ping (and check) passed.
 */
#include "nd_tool.h"

#include <endian.h>

#define DEFAULT_PORT 7174
#define MIN_SIZE 26u                /* rping's: room for its message text */
#define MAX_SIZE 65535u             /* rping's buffer is 64 KiB, the size at most one less */
#define INFO_LEN 16u

/* rping_rdma_info: big-endian address, token, size. */
struct rdma_info {
    uint64_t buf;
    uint32_t rkey;
    uint32_t size;
};

struct ping_ep {
    struct tool_ep e;
    uint8_t *start, *sink, *recv, *send;    /* pieces of e.buf */
    uint32_t rtoken;
    nd_sge recv_sge;
};

static void encode_info(uint8_t *out, const void *buf, uint32_t rkey, uint32_t size)
{
    uint64_t a = htobe64((uint64_t)(uintptr_t)buf);
    uint32_t k = htobe32(rkey), s = htobe32(size);

    memcpy(out, &a, 8);
    memcpy(out + 8, &k, 4);
    memcpy(out + 12, &s, 4);
}

static struct rdma_info decode_info(const uint8_t *in)
{
    struct rdma_info i;

    memcpy(&i.buf, in, 8);
    memcpy(&i.rkey, in + 8, 4);
    memcpy(&i.size, in + 12, 4);
    return (struct rdma_info){ be64toh(i.buf), be32toh(i.rkey), be32toh(i.size) };
}

static void open_ep(struct ping_ep *p, const struct sockaddr_in *addr)
{
    p->e.blocking = true;           /* leave the CPU to the peer (often an emulated VM) */
    tool_open(&p->e, addr, 2 * (MAX_SIZE + 1) + 2 * 64, 16, 1);
    p->start = p->e.buf;
    p->sink = p->start + MAX_SIZE + 1;
    p->recv = p->sink + MAX_SIZE + 1;
    p->send = p->recv + 64;
    p->rtoken = nd_mr_get_remote_token(p->e.mr);
    p->recv_sge = (nd_sge){ p->recv, INFO_LEN, p->e.token };
}

static void post_recv(struct ping_ep *p)
{
    TOOL_CHECK(nd_qp_receive(p->e.qp, NULL, &p->recv_sge, 1));
}

/* The next completion of @type; Send completions on the way are checked and dropped. A
 * receive that flushed (the peer left) returns with its status. */
static nd_result wait_for(struct ping_ep *p, nd_request_type type)
{
    for (;;) {
        nd_result r = tool_next_any(&p->e);

        if (r.request_type == type || (r.request_type == ND_REQUEST_TYPE_RECEIVE && r.status != ND_SUCCESS))
            return r;
        if (r.status != ND_SUCCESS)
            TOOL_DIE("completion failed: %s (type %d)", nd_strerror(r.status), r.request_type);
    }
}

static void send_info(struct ping_ep *p, const void *buf, uint32_t size)
{
    nd_sge s = { p->send, INFO_LEN, p->e.token };

    encode_info(p->send, buf, p->rtoken, size);
    TOOL_CHECK(nd_qp_send(p->e.qp, NULL, &s, 1, 0));
}

/* A go-ahead (or an advert) from the peer: exactly INFO_LEN bytes; false once it left. */
static bool recv_info(struct ping_ep *p, struct rdma_info *info)
{
    nd_result r = wait_for(p, ND_REQUEST_TYPE_RECEIVE);

    if (r.status != ND_SUCCESS)
        return false;
    if (r.bytes_transferred != INFO_LEN)
        TOOL_DIE("received %u bytes, expected %u", r.bytes_transferred, INFO_LEN);
    if (info)
        *info = decode_info(p->recv);
    post_recv(p);
    return true;
}

static void rdma(struct ping_ep *p, bool read, const struct rdma_info *to, uint32_t len)
{
    nd_sge s = { p->sink, len, p->e.token };

    if (len > MAX_SIZE + 1 || (read && len > to->size))
        TOOL_DIE("the peer advertised %u bytes, more than we hold", to->size);
    TOOL_CHECK(read ? nd_qp_read(p->e.qp, NULL, &s, 1, to->buf, to->rkey, 0)
                    : nd_qp_write(p->e.qp, NULL, &s, 1, to->buf, to->rkey, 0));
    nd_result r = wait_for(p, read ? ND_REQUEST_TYPE_READ : ND_REQUEST_TYPE_WRITE);
    if (r.status != ND_SUCCESS)
        TOOL_DIE("RDMA %s failed: %s", read ? "Read" : "Write", nd_strerror(r.status));
}

static int serve(const struct sockaddr_in *addr, bool verbose)
{
    struct ping_ep p = { 0 };
    struct rdma_info adv;
    uint32_t pings = 0;

    open_ep(&p, addr);
    post_recv(&p);
    tool_accept(&p.e, addr, NULL, 0);
    while (recv_info(&p, &adv)) {
        rdma(&p, true, &adv, adv.size);
        p.sink[adv.size ? adv.size - 1 : 0] = 0;
        if (verbose)
            printf("server ping data: %s\n", (char *)p.sink);
        send_info(&p, p.sink, adv.size);
        if (!recv_info(&p, &adv))
            TOOL_DIE("the client left between the Read and the Write of ping %u", pings);
        rdma(&p, false, &adv, (uint32_t)strlen((char *)p.sink) + 1);
        send_info(&p, p.sink, adv.size);
        pings++;
    }
    printf("server: %u pings served\n", pings);
    tool_close(&p.e);
    return pings ? 0 : 1;
}

/* The start buffer of ping @n, as rping fills it. */
static void fill(uint8_t *buf, uint32_t size, uint32_t n)
{
    int cc = snprintf((char *)buf, size, "rdma-ping-%u: ", n);
    unsigned char c = (unsigned char)(65 + n % 58);

    for (uint32_t i = (uint32_t)cc; i < size; i++) {
        buf[i] = c;
        if (++c > 122)
            c = 65;
    }
    buf[size - 1] = 0;
}

static int client(const struct sockaddr_in *addr, uint32_t count, uint32_t size, bool validate, bool verbose)
{
    struct ping_ep p = { 0 };
    uint32_t n;

    open_ep(&p, addr);
    post_recv(&p);
    tool_connect(&p.e, addr, NULL, NULL);
    for (n = 0; n < count; n++) {
        fill(p.start, size, n);
        memset(p.sink, 0, size);
        send_info(&p, p.start, size);
        if (!recv_info(&p, NULL))
            TOOL_DIE("ping %u: the server left before its Read", n);
        send_info(&p, p.sink, size);
        if (!recv_info(&p, NULL))
            TOOL_DIE("ping %u: the server left before its Write", n);
        if (validate && memcmp(p.start, p.sink, size))
            TOOL_DIE("ping %u: data mismatch", n);
        if (verbose)
            printf("ping data: %s\n", (char *)p.sink);
    }
    printf("client: %u pings of %u bytes%s\n", n, size, validate ? ", validated" : "");
    tool_close(&p.e);
    return 0;
}

int main(int argc, char **argv)
{
    struct sockaddr_in addr;
    const char *srv = NULL, *cli = NULL;
    uint32_t count = 10, size = 64;
    bool validate = false, verbose = false;
    int opt;

    while ((opt = getopt(argc, argv, "s:c:C:S:Vv")) != -1) {
        switch (opt) {
        case 's': srv = optarg; break;
        case 'c': cli = optarg; break;
        case 'C': count = (uint32_t)strtoul(optarg, NULL, 0); break;
        case 'S': size = (uint32_t)strtoul(optarg, NULL, 0); break;
        case 'V': validate = true; break;
        case 'v': verbose = true; break;
        default: goto usage;
        }
    }
    if (!!srv == !!cli || size < MIN_SIZE || size > MAX_SIZE || !tool_parse_addr(srv ? srv : cli, DEFAULT_PORT, &addr))
        goto usage;
    return srv ? serve(&addr, verbose) : client(&addr, count, size, validate, verbose);
usage:
    fprintf(stderr, "usage: nd_rping_compat -s <ip>[:port] | -c <ip>[:port] [-C count] [-S size %u-%u] [-V] [-v]\n",
            MIN_SIZE, MAX_SIZE);
    return 2;
}
