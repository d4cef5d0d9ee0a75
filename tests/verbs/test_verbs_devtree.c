// SPDX-License-Identifier: MIT
/*
 * nd0 where programs look for it outside the verbs calls, run under netdirect-run: the
 * device node UCX checks (/dev/infiniband/uverbs0: a character device it may open
 * read-write), and /sys/class/infiniband/nd0 and /sys/class/infiniband_verbs/uverbs0 with
 * what the verbs calls report (node GUID and type, port state, rate and link layer, each GID
 * with its type and interface, device/net), through open, fopen, stat, opendir and another
 * program (ls).
 * Usage: netdirect-run test_verbs_devtree   (77 where netdirect-run did not set it up)
 */
#include <dirent.h>
#include <errno.h>
#include <infiniband/verbs.h>
#include <limits.h>
#include <net/if.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CHECK(c) do { if (!(c)) { fprintf(stderr, "%s:%d: %s (errno %d)\n", __FILE__, __LINE__, #c, errno); exit(1); } } while (0)

/* rdma-core's helpers (IBVERBS_1.0), declared in its driver header only. */
int ibv_read_sysfs_file(const char *dir, const char *file, char *buf, size_t size);
const char *ibv_get_sysfs_path(void);

static char file_text[256];

/* The file's text without its newline, as ibv_read_sysfs_file gives it. */
static const char *sysfs(const char *dir, const char *file)
{
    CHECK(ibv_read_sysfs_file(dir, file, file_text, sizeof(file_text)) > 0);
    return file_text;
}

static bool dir_has(const char *dir, const char *name)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    bool found = false;

    CHECK(d);
    while ((de = readdir(d)))
        found |= !strcmp(de->d_name, name);
    closedir(d);
    return found;
}

static void check_gids(struct ibv_context *ctx, const char *ibdev, int n)
{
    char file[64], want[64], net[PATH_MAX];

    snprintf(net, sizeof(net), "%s/device/net", ibdev);
    for (int i = 0; i < n; i++) {
        struct ibv_gid_entry e;
        union ibv_gid g;
        const uint8_t *b = g.raw;

        CHECK(ibv_query_gid(ctx, 1, i, &g) == 0);
        snprintf(want, sizeof(want), "%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x",
                 b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
        snprintf(file, sizeof(file), "ports/1/gids/%d", i);
        CHECK(!strcmp(sysfs(ibdev, file), want));
        if (ibv_query_gid_ex(ctx, 1, (uint32_t)i, &e, 0))
            continue;                   /* an empty entry: no type, no interface */
        snprintf(file, sizeof(file), "ports/1/gid_attrs/types/%d", i);
        CHECK(!strcmp(sysfs(ibdev, file), "RoCE v2") && e.gid_type == IBV_GID_TYPE_ROCE_V2);
        snprintf(file, sizeof(file), "ports/1/gid_attrs/ndevs/%d", i);
        sysfs(ibdev, file);
        CHECK(if_nametoindex(file_text) == e.ndev_ifindex && e.ndev_ifindex != 0);
        CHECK(dir_has(net, file_text));
    }
}

int main(void)
{
    struct ibv_device **list;
    struct ibv_device_attr da;
    struct ibv_port_attr pa;
    struct ibv_context *ctx;
    struct stat st;
    char want[64], cmd[PATH_MAX + 64];
    const uint8_t *g;
    int n;
    FILE *f;

    if (!getenv("ND_DEVICE_TREE")) {
        printf("not started by netdirect-run\n");
        return 77;
    }
    /* UCX's test (uct_ib_device_is_accessible), word for word in effect. */
    CHECK(stat("/dev/infiniband/uverbs0", &st) == 0 && S_ISCHR(st.st_mode));
    CHECK(access("/dev/infiniband/uverbs0", R_OK | W_OK) == 0);
    CHECK(dir_has("/sys/class/infiniband", "nd0") && dir_has("/sys/class/infiniband_verbs", "uverbs0"));

    list = ibv_get_device_list(&n);
    CHECK(list && n == 1);
    CHECK(!strcmp(list[0]->dev_name, "uverbs0") && !strcmp(ibv_get_sysfs_path(), "/sys"));
    CHECK(!strcmp(list[0]->ibdev_path, "/sys/class/infiniband/nd0"));
    CHECK(!strcmp(sysfs(list[0]->dev_path, "ibdev"), "nd0"));
    ctx = ibv_open_device(list[0]);
    CHECK(ctx && ibv_query_device(ctx, &da) == 0 && ibv_query_port(ctx, 1, &pa) == 0);

    g = (const uint8_t *)&da.node_guid;
    snprintf(want, sizeof(want), "%02x%02x:%02x%02x:%02x%02x:%02x%02x", g[0], g[1], g[2], g[3], g[4], g[5], g[6], g[7]);
    CHECK(!strcmp(sysfs(list[0]->ibdev_path, "node_guid"), want));
    CHECK(!strcmp(sysfs(list[0]->ibdev_path, "sys_image_guid"), want));
    CHECK(!strcmp(sysfs(list[0]->ibdev_path, "node_type"), list[0]->node_type == IBV_NODE_RNIC ? "4: RNIC" : "1: CA"));
    CHECK(pa.state == IBV_PORT_ACTIVE && !strcmp(sysfs(list[0]->ibdev_path, "ports/1/state"), "4: ACTIVE"));
    CHECK(pa.link_layer == IBV_LINK_LAYER_ETHERNET &&
          !strcmp(sysfs(list[0]->ibdev_path, "ports/1/link_layer"), "Ethernet"));
    CHECK(pa.active_width == 2 && pa.active_speed == 32 &&
          !strcmp(sysfs(list[0]->ibdev_path, "ports/1/rate"), "100 Gb/sec (4X EDR)"));
    check_gids(ctx, list[0]->ibdev_path, pa.gid_tbl_len);

    /* stdio, and another program started from this one (rdma-core's tests run ls). */
    f = fopen("/sys/class/infiniband/nd0/node_guid", "r");
    CHECK(f && fgets(cmd, sizeof(cmd), f) && !strncmp(cmd, want, strlen(want)));
    fclose(f);
    CHECK(system("ls /sys/class/infiniband/nd0/device/net/ | grep -q .") == 0);

    ibv_close_device(ctx);
    ibv_free_device_list(list);
    printf("device tree ok (%d GIDs)\n", pa.gid_tbl_len);
    return 0;
}
