// SPDX-License-Identifier: MIT
/*
 * The device list: one device, "nd0", whose one port carries every address of the network
 * namespace as a GID. Its sysfs and /dev entries are the device tree's (devtree.c).
 */
#include "verbs_int.h"

#include "core/env.h"
#include "ndv.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#define VB_DEVICE_NAME "nd0"

static struct vb_device the_device;
static pthread_once_t device_once = PTHREAD_ONCE_INIT;

enum vb_personality vb_personality(void)
{
    return !strcmp(nd_env(ND_KNOB_VERBS_PERSONALITY), "iwarp") ? VB_IWARP : VB_ROCE;
}

/* As ND_VERBS_PERSONALITY spells it; the device tree's directories are named so
 * (devtree_shim.c reads the variable the same way: "iwarp", or else "roce"). */
const char *vb_personality_name(enum vb_personality p)
{
    return p == VB_IWARP ? "iwarp" : "roce";
}

/* The node GUID: the first interface MAC as an EUI-64 (as rxe and siw derive theirs), or
 * a locally administered value from the host id where there is none (lo alone). */
static uint64_t node_guid(void)
{
    struct ifaddrs *ifs, *ifa;
    uint64_t guid = 0;

    if (getifaddrs(&ifs) == 0) {
        for (ifa = ifs; ifa && !guid; ifa = ifa->ifa_next) {
            struct ifreq ifr = { 0 };
            int fd;

            if (!ifa->ifa_addr || ifa->ifa_addr->sa_family != AF_INET || (ifa->ifa_flags & IFF_LOOPBACK))
                continue;
            fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
            snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifa->ifa_name);
            if (fd >= 0 && ioctl(fd, SIOCGIFHWADDR, &ifr) == 0) {
                const uint8_t *m = (const uint8_t *)ifr.ifr_hwaddr.sa_data;
                uint8_t g[8] = { m[0] ^ 2, m[1], m[2], 0xff, 0xfe, m[3], m[4], m[5] };

                memcpy(&guid, g, 8);
            }
            if (fd >= 0)
                close(fd);
        }
        freeifaddrs(ifs);
    }
    if (!guid) {
        uint32_t id = (uint32_t)gethostid();
        uint8_t g[8] = { 0x02, 'N', 'D', 0, (uint8_t)(id >> 24), (uint8_t)(id >> 16), (uint8_t)(id >> 8), (uint8_t)id };

        memcpy(&guid, g, 8);
    }
    return guid;
}

static void device_init(void)
{
    struct vb_device *d = &the_device;

    d->personality = vb_personality();
    d->dev.node_type = d->personality == VB_IWARP ? IBV_NODE_RNIC : IBV_NODE_CA;
    d->dev.transport_type = d->personality == VB_IWARP ? IBV_TRANSPORT_IWARP : IBV_TRANSPORT_IB;
    snprintf(d->dev.name, sizeof(d->dev.name), "%s", VB_DEVICE_NAME);
    snprintf(d->dev.dev_name, sizeof(d->dev.dev_name), "uverbs0");
    snprintf(d->dev.dev_path, sizeof(d->dev.dev_path), "/sys/class/infiniband_verbs/uverbs0");
    snprintf(d->dev.ibdev_path, sizeof(d->dev.ibdev_path), "/sys/class/infiniband/%s", VB_DEVICE_NAME);
    d->guid = node_guid();
}

struct vb_device *vb_device_get(void)
{
    pthread_once(&device_once, device_init);
    return &the_device;
}

static bool gid_usable(const struct ifaddrs *ifa)
{
    return ifa->ifa_addr && (ifa->ifa_flags & IFF_UP) &&
           (ifa->ifa_addr->sa_family == AF_INET || ifa->ifa_addr->sa_family == AF_INET6);
}

uint32_t vb_gids(struct vb_gid *out, uint32_t max)
{
    struct ifaddrs *ifs, *ifa;
    uint32_t n = 0;

    if (getifaddrs(&ifs) < 0)
        return 0;
    /* IPv4 before IPv6, each an interface's own addresses before loopback's: programs that
     * take the first IPv4 GID (UCX) or index 0 as the port's address must find one a peer
     * on another host can reach, as an RNIC's table, which never holds loopback, gives. */
    for (int pass = 0; pass < 4; pass++)
        for (ifa = ifs; ifa && n < max; ifa = ifa->ifa_next) {
            bool v4 = pass < 2, lo = pass & 1;

            if (!gid_usable(ifa) || (ifa->ifa_addr->sa_family == AF_INET) != v4 ||
                ((ifa->ifa_flags & IFF_LOOPBACK) != 0) != lo)
                continue;
            memset(&out[n], 0, sizeof(out[n]));
            snprintf(out[n].ifname, sizeof(out[n].ifname), "%s", ifa->ifa_name);
            out[n].ifindex = if_nametoindex(ifa->ifa_name);
            if (v4) {
                out[n].gid.raw[10] = out[n].gid.raw[11] = 0xff;
                memcpy(&out[n].gid.raw[12], &((const struct sockaddr_in *)ifa->ifa_addr)->sin_addr, 4);
                out[n].ipv4 = true;
            } else {
                memcpy(out[n].gid.raw, &((const struct sockaddr_in6 *)ifa->ifa_addr)->sin6_addr, 16);
            }
            n++;
        }
    freeifaddrs(ifs);
    return n;
}

static enum ibv_mtu mtu_enum(uint32_t bytes)
{
    return bytes >= 4096 ? IBV_MTU_4096 : bytes >= 2048 ? IBV_MTU_2048 : bytes >= 1024 ? IBV_MTU_1024
           : bytes >= 512 ? IBV_MTU_512 : IBV_MTU_256;
}

uint32_t vb_port_mtu(void)
{
    struct ifaddrs *ifs, *ifa;
    uint32_t best = 0;
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

    if (fd >= 0 && getifaddrs(&ifs) == 0) {
        for (ifa = ifs; ifa; ifa = ifa->ifa_next) {
            struct ifreq ifr = { 0 };

            if (!gid_usable(ifa))
                continue;
            snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifa->ifa_name);
            if (ioctl(fd, SIOCGIFMTU, &ifr) == 0 && (uint32_t)ifr.ifr_mtu > best)
                best = (uint32_t)ifr.ifr_mtu;
        }
        freeifaddrs(ifs);
    }
    if (fd >= 0)
        close(fd);
    return mtu_enum(best ? best : 1500);
}

void vb_device_attr(const struct vb_device *d, struct ibv_device_attr *attr)
{
    const struct nd_caps *l = &nd_caps;

    memset(attr, 0, sizeof(*attr));
    snprintf(attr->fw_ver, sizeof(attr->fw_ver), "netdirect %s", ND_VERSION_STRING);
    attr->node_guid = attr->sys_image_guid = d->guid;
    attr->max_mr_size = l->max_mr_size;
    attr->page_size_cap = (uint64_t)sysconf(_SC_PAGESIZE);
    attr->vendor_id = l->vendor_id;
    attr->vendor_part_id = l->device_id;
    attr->max_qp = (int)l->max_qp;
    attr->max_qp_wr = (int)l->max_send_wr;
    attr->device_cap_flags = IBV_DEVICE_RC_RNR_NAK_GEN | IBV_DEVICE_MEM_WINDOW | IBV_DEVICE_MEM_WINDOW_TYPE_2B |
                              IBV_DEVICE_SRQ_RESIZE;
    attr->max_sge = (int)l->max_send_sge;
    attr->max_sge_rd = (int)l->max_read_sge;
    attr->max_cq = (int)l->max_cq;
    attr->max_cqe = (int)l->max_cqe;
    attr->max_mr = (int)l->max_mr;
    attr->max_pd = (int)l->max_pd;
    attr->max_qp_rd_atom = attr->max_res_rd_atom = (int)l->max_ird;
    attr->max_qp_init_rd_atom = (int)l->max_ord;
    /* Atomic among all atomics of the device, not with the target CPU's own stores
     * (core/atomic.c). */
    attr->atomic_cap = IBV_ATOMIC_HCA;
    attr->max_mw = (int)l->max_mr;
    attr->max_srq = (int)l->max_srq;
    attr->max_srq_wr = (int)l->max_srq_wr;
    attr->max_srq_sge = (int)l->max_recv_sge;
    attr->max_pkeys = 1;
    attr->local_ca_ack_delay = 15;
    attr->phys_port_cnt = 1;
}

VB_API const char *ibv_get_device_name(struct ibv_device *device)
{
    return device ? device->name : NULL;
}

VB_API __be64 ibv_get_device_guid(struct ibv_device *device)
{
    return device ? to_vb_device(device)->guid : 0;
}

VB_API int ibv_get_device_index(struct ibv_device *device)
{
    return device ? 0 : -1;
}

/* rdma-core's IBVERBS_1.0 helpers, no longer in verbs.h. */
VB_API int ibv_read_sysfs_file(const char *dir, const char *file, char *buf, size_t size);
VB_API const char *ibv_get_sysfs_path(void);

/* The device's files are the device tree's, which netdirect-run shows at /sys: read as
 * rdma-core does (the trailing newline dropped; -1 where the text would not fit). */
VB_API int ibv_read_sysfs_file(const char *dir, const char *file, char *buf, size_t size)
{
    char path[PATH_MAX];
    ssize_t n;
    int fd;

    if (!dir || !file || !buf || snprintf(path, sizeof(path), "%s/%s", dir, file) >= (int)sizeof(path)) {
        errno = EINVAL;
        return -1;
    }
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    n = read(fd, buf, size);
    close(fd);
    if (n > 0) {
        if (buf[n - 1] == '\n')
            buf[--n] = 0;
        else if ((size_t)n < size)
            buf[n] = 0;
        else
            return -1;
    }
    return (int)n;
}

VB_API const char *ibv_get_sysfs_path(void)
{
    return "/sys";
}

/* Memory the library never maps into a child: nothing to prepare for fork. */
VB_API int ibv_fork_init(void)
{
    return 0;
}

VB_API enum ibv_fork_status ibv_is_fork_initialized(void)
{
    return IBV_FORK_UNNEEDED;
}

VB_API const char *ndv_env(enum nd_knob knob)
{
    return nd_env(knob);
}

VB_API int ndv_status_errno(int st)
{
    return nd_errno_of(st);
}

VB_API int ndv_thread_start(pthread_t *thread, void *(*fn)(void *), void *arg, const char *name)
{
    return nd_thread_start(thread, fn, arg, name);
}
