/* SPDX-License-Identifier: MIT */
/*
 * The udp transport: datagram queue pairs (UD). Each QP owns a UDP socket, on a port that
 * its number names (ND_DGRAM_QPN), so a Send goes straight to the destination QP's port
 * with no lookup. A datagram is RoCE v2's headers without its ICRC (UDP's checksum covers
 * the datagram): BTH, DETH, ImmDt when there is immediate data, then the payload
 * (docs/design-ud.md). One engine thread per process waits on every UD socket and places
 * what arrives into posted receives; a polling application does the same from its polls.
 * Files: udp_wire.c (the headers), udp_engine.c (the thread), udp_ops.c (the transport).
 */
#ifndef ND_UDP_H
#define ND_UDP_H

#include "core/transport.h"
#include "core/mem_int.h"

#include <stdatomic.h>

#define UDP_BTH_LEN 12u
#define UDP_DETH_LEN 8u
#define UDP_IMM_LEN 4u
#define UDP_HDR_MAX (UDP_BTH_LEN + UDP_DETH_LEN + UDP_IMM_LEN)
#define UDP_OP_SEND_ONLY 0x64u          /* UD, SEND Only (IBA 9.2) */
#define UDP_OP_SEND_ONLY_IMM 0x65u      /* UD, SEND Only with Immediate */
#define UDP_BTH_SE 0x80u                /* solicited event */
#define UDP_PKEY_DEFAULT 0xffffu
/* The longest payload any UD QP of ours carries (IBV_MTU_4096), and the datagram it makes. */
#define UDP_PAYLOAD_MAX 4096u
#define UDP_DGRAM_MAX (UDP_PAYLOAD_MAX + UDP_HDR_MAX)
#define UDP_RX_BATCH 16u                /* datagrams per receive call */

/* A datagram's headers, parsed. */
struct udp_hdr {
    bool solicited;
    bool has_imm;
    uint32_t dest_qpn;
    uint32_t qkey;
    uint32_t src_qpn;
    uint32_t imm;                       /* as the sender's application gave it */
};

/* Write @h's headers into @buf (UDP_HDR_MAX bytes); their length. */
uint32_t udp_hdr_build(uint8_t *buf, const struct udp_hdr *h);
/* Parse the headers at the front of a datagram of @len bytes: their length, or -1 for bytes
 * that are not a UD Send of ours (nothing in them is trusted before this said yes). */
int udp_hdr_parse(const uint8_t *buf, size_t len, struct udp_hdr *h);
/* The 40 bytes of GRH space a receive gets in front of the payload: the IPv4 header in its
 * last 20 (RoCE v2 over IPv4, checksummed so rdma-core can tell) or the IPv6 one. @src and
 * @dst are both AF_INET or both AF_INET6. */
void udp_grh_build(uint8_t grh[40], const struct sockaddr *src, const struct sockaddr *dst, uint32_t udp_len);

struct udp_conn {
    struct nd_conn base;
    int sock;
    int family;                         /* AF_INET6 (dual-stack) or AF_INET */
    uint16_t port;
    uint32_t qpn;
    atomic_uint refs;                   /* the QP's, and the engine's while it serves us */
    uint32_t engine_slot, engine_gen;   /* our place in the engine's table */
    /* Under the QP lock: */
    struct nd_ring_producer rprod;      /* the QP's inbound ring: receive completions */
    uint32_t next_recv;                 /* the receive the next datagram fills */
    struct nd_mtab_memo memo;           /* the receives' registrations */
    bool starved;                       /* the engine left data for want of a receive */
    bool stopped;                       /* destroyed: nothing more is read */
    uint64_t dropped;                   /* datagrams that could not be sent or received */
    uint8_t *rxbuf;                     /* UDP_RX_BATCH datagrams of UDP_DGRAM_MAX */
};

static inline struct udp_conn *udp_conn_of(struct nd_conn *c)
{
    return (struct udp_conn *)c;
}

extern const struct nd_transport_ops udp_transport;

/* Give datagram QP @qp its socket and transport; *port: the socket's port. */
int udp_open(struct nd_qp *qp, uint16_t *port);
/* Read what waits on the socket into posted receives (QP lock held). true: the engine
 * should watch the socket again; false: it waits for a receive (c->starved). */
bool udp_drain(struct udp_conn *c);
void udp_conn_put(struct udp_conn *c);

/* The engine (udp_engine.c). */
int udp_engine_add(struct udp_conn *c);
void udp_engine_remove(struct udp_conn *c);
void udp_engine_rearm(struct udp_conn *c);

#endif
