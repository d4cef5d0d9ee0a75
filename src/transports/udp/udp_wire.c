// SPDX-License-Identifier: MIT
/*
 * The udp transport's bytes: RoCE v2's Base Transport Header and Datagram Extended
 * Transport Header (IBA 9.2, 9.3), the Immediate Data header, and the GRH space a UD
 * receive gets. Everything here is in network order on the wire.
 */
#include "udp.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>

static void put32(uint8_t *p, uint32_t v)
{
    v = htonl(v);
    memcpy(p, &v, 4);
}

static uint32_t get32(const uint8_t *p)
{
    uint32_t v;

    memcpy(&v, p, 4);
    return ntohl(v);
}

uint32_t udp_hdr_build(uint8_t *buf, const struct udp_hdr *h)
{
    uint32_t len = UDP_BTH_LEN + UDP_DETH_LEN;

    buf[0] = h->has_imm ? UDP_OP_SEND_ONLY_IMM : UDP_OP_SEND_ONLY;
    buf[1] = h->solicited ? UDP_BTH_SE : 0;    /* no migration, no pad, transport version 0 */
    buf[2] = UDP_PKEY_DEFAULT >> 8;
    buf[3] = UDP_PKEY_DEFAULT & 0xff;
    put32(buf + 4, h->dest_qpn & 0xffffffu);    /* the high byte is reserved */
    put32(buf + 8, 0);                          /* no ack request; PSN 0 (UD does not order) */
    put32(buf + 12, h->qkey);
    put32(buf + 16, h->src_qpn & 0xffffffu);
    if (h->has_imm) {
        memcpy(buf + 20, &h->imm, 4);           /* as given: verbs' immediate data is already big-endian */
        len += UDP_IMM_LEN;
    }
    return len;
}

int udp_hdr_parse(const uint8_t *buf, size_t len, struct udp_hdr *h)
{
    uint32_t need = UDP_BTH_LEN + UDP_DETH_LEN;

    if (len < need)
        return -1;
    if (buf[0] != UDP_OP_SEND_ONLY && buf[0] != UDP_OP_SEND_ONLY_IMM)
        return -1;
    if ((buf[1] & 0x0f) != 0)                   /* transport version 0 */
        return -1;
    if (((uint32_t)buf[2] << 8 | buf[3]) != UDP_PKEY_DEFAULT)
        return -1;
    h->solicited = (buf[1] & UDP_BTH_SE) != 0;
    h->dest_qpn = get32(buf + 4) & 0xffffffu;
    h->qkey = get32(buf + 12);
    h->src_qpn = get32(buf + 16) & 0xffffffu;
    h->has_imm = buf[0] == UDP_OP_SEND_ONLY_IMM;
    h->imm = 0;
    if (h->has_imm) {
        if (len < need + UDP_IMM_LEN)
            return -1;
        memcpy(&h->imm, buf + need, 4);
        need += UDP_IMM_LEN;
    }
    return (int)need;
}

static uint16_t ip_checksum(const uint8_t *p, size_t len)
{
    uint32_t sum = 0;

    for (size_t i = 0; i + 1 < len; i += 2)
        sum += (uint32_t)p[i] << 8 | p[i + 1];
    while (sum >> 16)
        sum = (sum & 0xffff) + (sum >> 16);
    return (uint16_t)~sum;
}

void udp_grh_build(uint8_t grh[40], const struct sockaddr *src, const struct sockaddr *dst, uint32_t udp_len)
{
    memset(grh, 0, 40);
    if (src->sa_family == AF_INET) {
        uint8_t *ip = grh + 20;
        uint16_t total = (uint16_t)(20 + udp_len), csum;

        ip[0] = 0x45;                           /* version 4, 5 words */
        ip[2] = (uint8_t)(total >> 8);
        ip[3] = (uint8_t)total;
        ip[6] = 0x40;                           /* don't fragment */
        ip[8] = 64;                             /* TTL */
        ip[9] = IPPROTO_UDP;
        memcpy(ip + 12, &((const struct sockaddr_in *)src)->sin_addr, 4);
        memcpy(ip + 16, &((const struct sockaddr_in *)dst)->sin_addr, 4);
        csum = ip_checksum(ip, 20);
        ip[10] = (uint8_t)(csum >> 8);
        ip[11] = (uint8_t)csum;
    } else {
        put32(grh, 6u << 28);                   /* version 6, traffic class 0, flow 0 */
        grh[4] = (uint8_t)(udp_len >> 8);
        grh[5] = (uint8_t)udp_len;
        grh[6] = IPPROTO_UDP;
        grh[7] = 64;                            /* hop limit */
        memcpy(grh + 8, &((const struct sockaddr_in6 *)src)->sin6_addr, 16);
        memcpy(grh + 24, &((const struct sockaddr_in6 *)dst)->sin6_addr, 16);
    }
}
