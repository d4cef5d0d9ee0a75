// SPDX-License-Identifier: MIT
/*
 * libFuzzer target: a CQ consuming a ring whose bytes a hostile peer controls. The input
 * is the ring header's producer hint, 16 entries (with their sequence words), then a script of consumer operations
 * (poll, notify, cancel) interleaved with more scribbling. Whatever the bytes, the CQ
 * returns at most what the ring holds, only results its owner validated, and never
 * reads or writes outside the ring.
 */
#include <netdirect/netdirect.h>
#include "core/cq_int.h"

#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

#define ENTRIES 16

static nd_adapter *adapter;
static nd_port *port;

static enum nd_xlate strict_translate(void *ctx, const struct nd_cqe *e, nd_result *r)
{
    if (e->wr_index >= ENTRIES || e->type > ND_REQUEST_TYPE_WRITE || e->bytes > 4096)
        return ND_XLATE_BAD;
    r->status = e->status;
    r->bytes_transferred = e->bytes;
    r->qp_context = ctx;
    r->request_context = NULL;
    r->request_type = (nd_request_type)e->type;
    return ND_XLATE_OK;
}

static const struct nd_cq_src_ops ops = { .translate = strict_translate };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct { struct nd_ring_hdr hdr; struct nd_cqe ents[ENTRIES]; } *ring;
    nd_overlapped ov[4] = { { 0 } };
    struct nd_cq_src *src;
    nd_result res[ENTRIES * 2];
    nd_cq *cq;
    uint32_t prod;

    if (!adapter) {
        struct sockaddr_in lo = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };

        if (nd_open_adapter_by_address((struct sockaddr *)&lo, sizeof(lo), &adapter) != ND_SUCCESS ||
            nd_port_create(&port) != ND_SUCCESS)
            abort();
    }
    if (size < sizeof(prod) + sizeof(ring->ents))
        return 0;
    ring = aligned_alloc(64, sizeof(*ring));
    memset(ring, 0, sizeof(*ring));
    if (nd_adapter_create_completion_queue(adapter, port, 8, 0, 0, &cq) != ND_SUCCESS ||
        nd_cq_attach(cq, &ring->hdr, ring->ents, ENTRIES, &ops, NULL, &src) != ND_SUCCESS)
        abort();
    memcpy(&prod, data, sizeof(prod));
    memcpy(ring->ents, data + sizeof(prod), sizeof(ring->ents));
    atomic_store(&ring->hdr.prod, prod);
    for (size_t i = sizeof(prod) + sizeof(ring->ents); i < size; i++) {
        uint8_t op = data[i];
        uint32_t n;

        switch (op & 7) {
        case 0: case 1: case 2:
            n = nd_cq_get_results(cq, res, 1 + (op >> 3) % (ENTRIES * 2));
            if (n > ENTRIES)
                abort();
            for (uint32_t k = 0; k < n; k++)
                if (res[k].request_type > ND_REQUEST_TYPE_WRITE || res[k].bytes_transferred > 4096)
                    abort();
            break;
        case 3:
            if (ov[op >> 6].status != ND_PENDING)
                nd_cq_notify(cq, (op >> 3) % 3, &ov[op >> 6]);
            break;
        case 4:
            nd_cq_cancel_overlapped_requests(cq);
            break;
        case 5:   /* the peer marks an entry valid for some lap */
            __atomic_store_n(&ring->ents[(op >> 3) % ENTRIES].seq,
                             atomic_load(&ring->hdr.cons) + 1 + (op >> 7) * ENTRIES, __ATOMIC_RELEASE);
            atomic_store(&ring->hdr.prod, atomic_load(&ring->hdr.prod) + (op >> 3));
            break;
        case 6:   /* the peer rewrites an entry byte */
            if (i + 1 < size)
                ((uint8_t *)ring->ents)[(op >> 3) % sizeof(ring->ents)] = data[++i];
            break;
        default: {
            nd_overlapped *got;

            while (nd_port_wait(port, 0, &got) == ND_SUCCESS)
                ;
        }
        }
    }
    nd_cq_cancel_overlapped_requests(cq);
    for (nd_overlapped *got; nd_port_wait(port, 0, &got) == ND_SUCCESS;)
        ;
    nd_cq_detach(cq, src);
    if (nd_cq_close(cq) != ND_SUCCESS)
        abort();
    free(ring);
    return 0;
}
