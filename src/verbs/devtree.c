// SPDX-License-Identifier: MIT
/*
 * nd0 as programs look for it outside the verbs calls: its /sys/class/infiniband,
 * /sys/class/infiniband_verbs and /dev/infiniband entries, written as ordinary files into a
 * directory of the user's own (the device tree). netdirect-run has it written before the
 * program starts and preloads libnetdirect-devtree.so, which shows it at those paths
 * (devtree_shim.c); ibv_get_device_list writes it again, so that it follows the addresses.
 * Every value comes from the function the verbs call reporting it uses.
 */
#include "verbs_int.h"

#include "core/env.h"
#include "core/log.h"
#include "ndv.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* nd0's directory in the tree. */
#define IBDEV "sys/class/infiniband/nd0"

static int own_dir(const char *path);

/* The user's directory for it: $XDG_RUNTIME_DIR/netdirect, else /tmp/netdirect-<uid>; made
 * 0700 and used only if it is a directory (not a link) the user owns that no one else may
 * write, so that another user cannot put a device in front of this one's programs. */
static int tree_base(char *out, size_t len)
{
    const char *run = getenv("XDG_RUNTIME_DIR");
    int n = run && *run == '/' ? snprintf(out, len, "%s/netdirect", run)
                               : snprintf(out, len, "/tmp/netdirect-%u", (unsigned)getuid());

    if (n < 0 || (size_t)n >= len)
        return -ENAMETOOLONG;
    if (mkdir(out, 0700) < 0 && errno != EEXIST)
        return -errno;
    return own_dir(out);
}

/* mkdir -p of @path's parent directories (@path below an existing root). */
static int make_parents(char *path)
{
    for (char *s = strchr(path + 1, '/'); s; s = strchr(s + 1, '/')) {
        *s = 0;
        int r = mkdir(path, 0755) < 0 && errno != EEXIST ? -errno : 0;
        *s = '/';
        if (r)
            return r;
    }
    return 0;
}

/* Replace @root/@rel atomically: readers see the old file or the new one. */
static int put_file(const char *root, const char *rel, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int put_file(const char *root, const char *rel, const char *fmt, ...)
{
    char path[PATH_MAX], tmp[PATH_MAX + 32], text[256];
    va_list ap;
    int fd, n;

    va_start(ap, fmt);
    n = vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof(text) || snprintf(path, sizeof(path), "%s/%s", root, rel) >= (int)sizeof(path))
        return -ENAMETOOLONG;
    snprintf(tmp, sizeof(tmp), "%s.%d.tmp", path, (int)getpid());
    if (make_parents(path) < 0)
        return -errno;
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0444);     /* read-only, as sysfs shows it */
    if (fd < 0)
        return -errno;
    if (write(fd, text, (size_t)n) != n || close(fd) < 0 || rename(tmp, path) < 0) {
        int e = errno;

        unlink(tmp);
        return -e;
    }
    return 0;
}

static int put_link(const char *root, const char *rel, const char *target)
{
    char path[PATH_MAX], tmp[PATH_MAX + 32];

    if (snprintf(path, sizeof(path), "%s/%s", root, rel) >= (int)sizeof(path))
        return -ENAMETOOLONG;
    snprintf(tmp, sizeof(tmp), "%s.%d.tmp", path, (int)getpid());
    if (make_parents(path) < 0)
        return -errno;
    unlink(tmp);
    if (symlink(target, tmp) < 0 || rename(tmp, path) < 0) {
        int e = errno;

        unlink(tmp);
        return -e;
    }
    return 0;
}

/* Remove the entries of directory @root/@rel that @keep (NULL-terminated names, or a count
 * of numbered entries when @numbered) does not name: an address or interface gone since. */
static void prune(const char *root, const char *rel, const char *const *keep, uint32_t numbered)
{
    char path[PATH_MAX];
    struct dirent *de;
    DIR *d;

    snprintf(path, sizeof(path), "%s/%s", root, rel);
    d = opendir(path);
    if (!d)
        return;
    while ((de = readdir(d))) {
        size_t len = strlen(de->d_name);
        /* Another process's file being written (put_file's) is not ours to remove. */
        bool kept = de->d_name[0] == '.' || (len > 4 && !strcmp(de->d_name + len - 4, ".tmp"));
        char *end;

        if (keep)
            for (const char *const *k = keep; *k && !kept; k++)
                kept = !strcmp(*k, de->d_name);
        else if (!kept)
            kept = strtoul(de->d_name, &end, 10) < numbered && !*end;
        if (!kept)
            unlinkat(dirfd(d), de->d_name, 0);
    }
    closedir(d);
}

static void gid_text(const union ibv_gid *g, char *out, size_t len)
{
    const uint8_t *b = g->raw;

    snprintf(out, len, "%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x", b[0], b[1],
             b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
}

/* The port, whose GIDs are @gids[@n]. */
static int put_port(const char *root, const struct vb_gid *gids, uint32_t n)
{
    uint32_t slots = n ? n : 1;
    const char *ifnames[VB_GID_MAX + 1] = { 0 };
    uint32_t nifs = 0;
    char rel[128], text[64];
    int r = 0;

    r |= put_file(root, IBDEV "/ports/1/state", "4: ACTIVE\n");
    r |= put_file(root, IBDEV "/ports/1/phys_state", "5: LinkUp\n");
    r |= put_file(root, IBDEV "/ports/1/link_layer", "Ethernet\n");
    r |= put_file(root, IBDEV "/ports/1/rate", "%s\n", VB_PORT_RATE);
    r |= put_file(root, IBDEV "/ports/1/lid", "0x0\n");
    r |= put_file(root, IBDEV "/ports/1/sm_lid", "0x0\n");
    r |= put_file(root, IBDEV "/ports/1/lid_mask_count", "0\n");
    r |= put_file(root, IBDEV "/ports/1/cap_mask", "0x%08x\n", (unsigned)IBV_PORT_CM_SUP);
    for (uint32_t i = 0; i < slots; i++) {
        union ibv_gid empty = { 0 };

        gid_text(i < n ? &gids[i].gid : &empty, text, sizeof(text));
        snprintf(rel, sizeof(rel), IBDEV "/ports/1/gids/%u", i);
        r |= put_file(root, rel, "%s\n", text);
        if (i >= n)
            continue;
        snprintf(rel, sizeof(rel), IBDEV "/ports/1/gid_attrs/types/%u", i);
        r |= put_file(root, rel, "RoCE v2\n");
        snprintf(rel, sizeof(rel), IBDEV "/ports/1/gid_attrs/ndevs/%u", i);
        r |= put_file(root, rel, "%s\n", gids[i].ifname);
        bool seen = false;

        for (uint32_t k = 0; k < nifs && !seen; k++)
            seen = !strcmp(ifnames[k], gids[i].ifname);
        if (!seen) {
            ifnames[nifs++] = gids[i].ifname;
            snprintf(rel, sizeof(rel), IBDEV "/device/net/%s", gids[i].ifname);
            snprintf(text, sizeof(text), "/sys/class/net/%s", gids[i].ifname);
            r |= put_link(root, rel, text);
        }
    }
    prune(root, IBDEV "/ports/1/gids", NULL, slots);
    prune(root, IBDEV "/ports/1/gid_attrs/types", NULL, n);
    prune(root, IBDEV "/ports/1/gid_attrs/ndevs", NULL, n);
    prune(root, IBDEV "/device/net", ifnames, 0);
    return r;
}

/* The tree of nd0 as a program with @personality sees it (only the node type differs). */
static int put_device(const char *root, const struct vb_device *d, enum vb_personality personality,
                      const struct vb_gid *gids, uint32_t n)
{
    const uint8_t *g = (const uint8_t *)&d->guid;
    char guid[32];
    int r = 0;

    snprintf(guid, sizeof(guid), "%02x%02x:%02x%02x:%02x%02x:%02x%02x", g[0], g[1], g[2], g[3], g[4], g[5], g[6],
             g[7]);
    r |= put_file(root, IBDEV "/node_type", "%s\n",
                  personality == VB_IWARP ? "4: RNIC" : "1: CA");
    r |= put_file(root, IBDEV "/node_guid", "%s\n", guid);
    r |= put_file(root, IBDEV "/sys_image_guid", "%s\n", guid);
    r |= put_file(root, IBDEV "/fw_ver", "%s\n", ND_VERSION_STRING);
    r |= put_file(root, IBDEV "/hca_type", "netdirect\n");
    r |= put_file(root, IBDEV "/hw_rev", "0\n");
    r |= put_file(root, IBDEV "/board_id", "netdirect\n");
    r |= put_file(root, IBDEV "/node_desc", "netdirect nd0\n");
    r |= put_file(root, IBDEV "/device/numa_node", "-1\n");
    r |= put_file(root, "sys/class/infiniband_verbs/abi_version", "6\n");
    r |= put_file(root, "sys/class/infiniband_verbs/uverbs0/ibdev", "nd0\n");
    r |= put_file(root, "sys/class/infiniband_verbs/uverbs0/abi_version", "1\n");
    /* A character device any program may open read-write, as UCX checks for one; nothing
     * is done through it. */
    r |= put_link(root, "dev/infiniband/uverbs0", "/dev/null");
    r |= put_link(root, "dev/infiniband/rdma_cm", "/dev/null");
    return r | put_port(root, gids, n);
}

/* A directory the user owns that no one else may write. */
static int own_dir(const char *path)
{
    struct stat st;

    if (lstat(path, &st) < 0)
        return -errno;
    return S_ISDIR(st.st_mode) && st.st_uid == getuid() && !(st.st_mode & 022) ? 0 : -EPERM;
}

/* The tree of a personality below @root: programs in one namespace may differ in it. */
static int put_personality(const char *root, enum vb_personality personality, const struct vb_gid *gids,
                           uint32_t n)
{
    char dir[PATH_MAX];

    if (snprintf(dir, sizeof(dir), "%s/%s", root, vb_personality_name(personality)) >= (int)sizeof(dir))
        return -ENAMETOOLONG;
    if (mkdir(dir, 0755) < 0 && errno != EEXIST)
        return -errno;
    return put_device(dir, vb_device_get(), personality, gids, n) ? -EIO : 0;
}

/* Write the trees (one per personality) and return their directory in @root: one per user
 * and network namespace, rewritten in place. */
int vb_devtree_publish(char *root, size_t len)
{
    char base[PATH_MAX - 64];
    struct stat ns = { 0 };
    int r = tree_base(base, sizeof(base));

    if (r < 0)
        return r;
    stat("/proc/self/ns/net", &ns);
    if (snprintf(root, len, "%s/devices-%llu", base, (unsigned long long)ns.st_ino) >= (int)len)
        return -ENAMETOOLONG;
    if (mkdir(root, 0755) < 0 && errno != EEXIST)
        return -errno;
    if ((r = own_dir(root)) < 0)
        return r;
    struct vb_gid gids[VB_GID_MAX];
    uint32_t n = vb_gids(gids, VB_GID_MAX);

    if ((r = put_personality(root, VB_ROCE, gids, n)) < 0)
        return r;
    return put_personality(root, VB_IWARP, gids, n);
}

/* ibv_get_device_list: the tree netdirect-run made follows the addresses of now. Only what
 * changes is the GIDs, so the tree is written again only when they differ from what this
 * process wrote last (a program may list the devices once per test, hundreds of times). */
void vb_devtree_refresh(void)
{
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    static struct vb_gid written[VB_GID_MAX];
    static uint32_t n_written = UINT32_MAX;
    const char *tree = nd_env(ND_KNOB_DEVICE_TREE);
    struct vb_gid gids[VB_GID_MAX];
    uint32_t n;

    if (*tree != '/')
        return;
    n = vb_gids(gids, VB_GID_MAX);
    pthread_mutex_lock(&lock);
    if (n != n_written || memcmp(gids, written, n * sizeof(gids[0]))) {
        if (own_dir(tree) == 0 && put_personality(tree, vb_device_get()->personality, gids, n) == 0) {
            memcpy(written, gids, n * sizeof(gids[0]));
            n_written = n;
        } else {
            nd_log(ND_LOG_WARN, ND_SUB_VERBS, "device tree %s: not all of it could be written", tree);
        }
    }
    pthread_mutex_unlock(&lock);
}

VB_API int ndv_devtree_publish(char *root, size_t len)
{
    return vb_devtree_publish(root, len);
}
