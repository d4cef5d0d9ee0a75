// SPDX-License-Identifier: MIT
/*
 * libFuzzer target: a connected iwarp queue pair whose peer sends whatever the input says.
 * The input is a list of records, each turned into one FPDU with fuzzed fields (Write,
 * Send, Read Request, Read Response, atomic, Terminate, or raw bytes), so the fuzzer reaches the
 * placement and protection checks, not only the framing. The queue pair has receives
 * posted, a Read and a Send outstanding, and one registered region (remote atomics allowed)
 * between guard bytes; the input's first byte says whether the peer is netdirect (its
 * extensions, atomics among them, in use).
 * Whatever arrives: no crash (ASan checks every access), nothing written outside the
 * registered region (the guards stay intact), completions drained.
 */
#include <netdirect/netdirect.h>
#include "core/qp_int.h"
#include "transports/iwarp/iwarp.h"
#include "fuzz_input.h"

#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define GUARD 4096u
#define REGION 16384u               /* receives at 0 and 2K, the Read sink at 4K; all remotely writable */

static nd_adapter *adapter;
static nd_port *port;
static nd_cq *cq;
static nd_mr *mr;
static uint8_t *mem;                /* GUARD | REGION | GUARD */
static uint32_t rtoken, ltoken;

static void setup(void)
{
    struct sockaddr_in lo = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    nd_overlapped ov = { 0 };

    mem = aligned_alloc(4096, GUARD * 2 + REGION);
    if (!mem || nd_open_adapter_by_address((struct sockaddr *)&lo, sizeof(lo), &adapter) != ND_SUCCESS ||
        nd_port_create(&port) != ND_SUCCESS ||
        nd_adapter_create_completion_queue(adapter, port, 64, 0, 0, &cq) != ND_SUCCESS ||
        nd_adapter_create_memory_region(adapter, port, &mr) != ND_SUCCESS ||
        nd_mr_register_atomic(mr, mem + GUARD, REGION, ND_MR_FLAG_ALLOW_LOCAL_WRITE | ND_MR_FLAG_ALLOW_REMOTE_READ |
                              ND_MR_FLAG_ALLOW_REMOTE_WRITE | ND_MR_FLAG_RDMA_READ_SINK, true) != 0)
        abort();
    (void)ov;
    rtoken = nd_mr_get_remote_token(mr);
    ltoken = nd_mr_get_local_token(mr);
}

/* One FPDU from the next record: header fields, payload and trailer as the input says. */
static size_t build(struct input *in, uint8_t *out, bool crc)
{
    struct iw_hdr h = { .ddp_version = IW_DDP_VERSION, .rdmap_version = IW_RDMAP_VERSION, .last = true };
    uint8_t kind = (uint8_t)take(in, 1);
    uint32_t plen = take(in, 1) * 8, hl;
    uint64_t base = (uint64_t)(uintptr_t)(mem + GUARD);

    switch (kind % 7) {
    case 0:                         /* raw bytes */
        plen = plen < in->left ? plen : (uint32_t)in->left;
        memcpy(out, in->p, plen);
        in->p += plen;
        in->left -= plen;
        return plen;
    case 1:
        h.tagged = true;
        h.opcode = IW_OP_WRITE;
        h.stag = kind & 0x40 ? take(in, 4) : rtoken;
        h.to = base + (int16_t)take(in, 2) * 4;
        break;
    case 2:
        h.opcode = (uint8_t)(IW_OP_SEND + (kind >> 3) % 4);
        h.qn = kind & 0x40 ? take(in, 1) : IW_QN_SEND;
        h.msn = take(in, 1);
        h.mo = take(in, 2);
        break;
    case 3:
        h.opcode = IW_OP_READ_REQ;
        h.qn = IW_QN_READ;
        h.msn = take(in, 1);
        h.rr.sink_stag = take(in, 4);
        h.rr.size = take(in, 2);
        h.rr.src_stag = kind & 0x40 ? take(in, 4) : rtoken;
        h.rr.src_to = base + (int16_t)take(in, 2) * 4;
        plen = 0;
        break;
    case 4:
        h.tagged = true;
        h.opcode = IW_OP_READ_RESP;
        h.stag = kind & 0x40 ? take(in, 4) : ltoken;
        h.to = base + (int16_t)take(in, 2);
        break;
    case 5:
        h.opcode = IW_OP_ND_ATOMIC_REQ;
        h.qn = IW_QN_READ;
        h.msn = take(in, 1);
        h.rr.sink_stag = take(in, 4);
        h.rr.size = kind & 0x10 ? take(in, 1) : 8;
        h.rr.src_stag = kind & 0x40 ? take(in, 4) : rtoken;
        h.rr.src_to = base + (int16_t)take(in, 2) * (kind & 0x08 ? 1 : 8);
        h.atomic_op = take(in, 1) % 3;
        h.add_or_cmp = take(in, 4);
        h.swap = take(in, 4);
        plen = 0;
        break;
    default:
        h.opcode = IW_OP_TERMINATE;
        h.qn = IW_QN_TERM;
        h.msn = 1;
        h.term.layer = (uint8_t)take(in, 1) & 0x0f;
        h.term.etype = (uint8_t)take(in, 1) & 0x0f;
        h.term.ecode = (uint8_t)take(in, 1);
        h.term.d = h.term.m = kind & 0x40;
        h.term.attach_len = (uint16_t)(take(in, 1) % (IW_TERM_ATTACH_MAX + 1));
        for (uint32_t i = 0; i < h.term.attach_len; i++)
            h.term.attach[i] = (uint8_t)take(in, 1);
        plen = 0;
        break;
    }
    if (kind & 0x80)
        h.last = false;
    hl = iw_hdr_len_for(h.tagged ? IW_DDP_T : 0, h.opcode) + (h.opcode == IW_OP_TERMINATE ? h.term.attach_len : 0);
    h.ulpdu_len = (uint16_t)(hl + plen);
    size_t n = iw_hdr_encode(out, &h);
    for (uint32_t i = 0; i < plen; i++)
        out[n++] = (uint8_t)(0xa5 ^ i);
    uint32_t pad = iw_pad(h.ulpdu_len);
    memset(out + n, 0, pad);
    n += pad;
    uint32_t c = crc && !(kind & 0x20) ? iw_crc32c(out, n) : take(in, 4);
    iw_put_le32(out + n, c);
    return n + 4;
}

static struct nd_qp *connect_qp(int sock, bool crc, bool nd_peer)
{
    nd_qp *qp;
    struct iw_conn *c = calloc(1, sizeof(*c));
    nd_sge rs = { mem + GUARD, 2048, ltoken }, sink = { mem + GUARD + 4096, 512, ltoken };

    if (!c || nd_adapter_create_queue_pair(adapter, cq, cq, NULL, 4, 4, 2, 2, 64, &qp) != ND_SUCCESS)
        abort();
    nd_lock_acquire(&qp->lock);
    if (iw_conn_init(c, qp, &iw_pumps) != 0)
        abort();
    c->sock = sock;
    c->crc = crc;
    c->nd_peer = nd_peer;
    c->ird = c->ord = c->peer_ird = 2;
    c->timeout_ns = 10ull * 1000000000;
    c->fpdu_max = 512;
    nd_lock_release(&qp->lock);
    c->base.ops = &iwarp_transport;
    nd_qp_set_connected(qp, &c->base);
    nd_qp_receive(qp, NULL, &rs, 1);
    rs.buffer = mem + GUARD + 2048;
    nd_qp_receive(qp, NULL, &rs, 1);
    nd_qp_read(qp, NULL, &sink, 1, 0x1000, 0x1234, 0);
    nd_qp_send(qp, NULL, &rs, 1, 0);
    return qp;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static uint8_t frame[2 + 80 + 2048 + 8 + 256];
    struct input in = { data, size };
    nd_result res[16];
    int sv[2];
    nd_qp *qp;
    bool crc = size && (data[0] & 1);

    if (!adapter)
        setup();
    memset(mem, 0x5c, GUARD * 2 + REGION);
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv))
        abort();
    qp = connect_qp(sv[0], crc, size && (data[0] & 2));
    take(&in, 1);
    while (in.left) {
        size_t n = build(&in, frame, crc);
        char sink[4096];

        if (n && send(sv[1], frame, n, MSG_NOSIGNAL) < 0)
            break;
        nd_lock_acquire(&qp->lock);
        if (qp->conn)
            iw_rx_pump(iw_conn_of(qp->conn));
        nd_lock_release(&qp->lock);
        while (read(sv[1], sink, sizeof(sink)) > 0)
            ;
    }
    while (nd_cq_get_results(cq, res, 16))
        ;
    for (uint32_t i = 0; i < GUARD; i++)
        if (mem[i] != 0x5c || mem[GUARD + REGION + i] != 0x5c)
            abort();
    nd_qp_close(qp);
    close(sv[1]);
    return 0;
}
