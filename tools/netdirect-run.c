// SPDX-License-Identifier: MIT
/*
 * netdirect-run: run a program on netdirect's libibverbs.so.1 and librdmacm.so.1 (rdma-core
 * 44's ABI), which live in a private directory, never the system library path. That
 * directory goes first in LD_LIBRARY_PATH (the Debian binaries carry no RPATH). The device
 * nd0 gets its entries under /sys/class/infiniband and /dev/infiniband, where programs look
 * for a device before they use it (UCX, rdma-core's tests): libibverbs writes them into the
 * user's own directory and the preloaded libnetdirect-devtree.so shows them there. Then the
 * program is executed in place of this one.
 *   netdirect-run CMD [ARGS...]
 */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Where the libraries are, relative to this program: installed (bin -> lib/netdirect) or
 * in the build tree (tools -> lib/netdirect). */
static const char *const lib_dirs[] = { ND_RUN_INSTALLED_LIBDIR, "../lib/netdirect" };

static int find_libdir(char *out, size_t size)
{
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    char *slash;

    if (n <= 0)
        return -1;
    self[n] = 0;
    slash = strrchr(self, '/');
    if (!slash)
        return -1;
    *slash = 0;
    for (size_t i = 0; i < sizeof(lib_dirs) / sizeof(lib_dirs[0]); i++) {
        char probe[PATH_MAX + 64];
        int len = lib_dirs[i][0] == '/' ? snprintf(out, size, "%s", lib_dirs[i])
                                        : snprintf(out, size, "%s/%s", self, lib_dirs[i]);

        if (len < 0 || (size_t)len >= size || strlen(out) + sizeof("/libibverbs.so.1") > sizeof(probe))
            continue;
        memcpy(probe, out, strlen(out));
        memcpy(probe + strlen(out), "/libibverbs.so.1", sizeof("/libibverbs.so.1"));
        if (access(probe, R_OK) == 0)
            return 0;
    }
    return -1;
}

/* Prepend @value to the ':'-separated list in @name. */
static int env_prepend(const char *name, const char *value)
{
    const char *old = getenv(name);
    size_t len = strlen(value) + (old ? strlen(old) : 0) + 2;
    char *v = malloc(len);
    int r;

    if (!v)
        return -1;
    if (old && *old)
        snprintf(v, len, "%s:%s", value, old);
    else
        snprintf(v, len, "%s", value);
    r = setenv(name, v, 1);
    free(v);
    return r;
}

/* Have libibverbs write nd0's device tree and preload what shows it. Without it the program
 * still runs; it only finds no device where it looks outside the verbs calls. */
static void publish_device_tree(const char *dir)
{
    char lib[PATH_MAX + 32], root[PATH_MAX];
    int (*publish)(char *, size_t);
    void *h;
    int r;

    snprintf(lib, sizeof(lib), "%s/libibverbs.so.1", dir);
    h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    publish = h ? (int (*)(char *, size_t))dlsym(h, "ndv_devtree_publish") : NULL;
    r = publish ? publish(root, sizeof(root)) : -ENOENT;
    if (r < 0) {
        fprintf(stderr, "netdirect-run: no device tree (%s): /sys/class/infiniband shows no nd0\n",
                h ? strerror(-r) : dlerror());
        return;
    }
    snprintf(lib, sizeof(lib), "%s/libnetdirect-devtree.so", dir);
    if (setenv("ND_DEVICE_TREE", root, 1) < 0 || env_prepend("LD_PRELOAD", lib) < 0)
        perror("netdirect-run: setenv");
}

int main(int argc, char **argv)
{
    char dir[PATH_MAX], *path;
    const char *old = getenv("LD_LIBRARY_PATH");

    if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        fprintf(stderr, "usage: netdirect-run CMD [ARGS...]\n"
                        "runs CMD with netdirect's libibverbs.so.1 and librdmacm.so.1\n");
        return argc < 2 ? 2 : 0;
    }
    if (find_libdir(dir, sizeof(dir)) < 0) {
        fprintf(stderr, "netdirect-run: netdirect's libibverbs.so.1 not found next to this program\n");
        return 127;
    }
    if (old && *old) {
        size_t len = strlen(dir) + strlen(old) + 2;

        path = malloc(len);
        if (!path)
            return 127;
        snprintf(path, len, "%s:%s", dir, old);
    } else {
        path = dir;
    }
    if (setenv("LD_LIBRARY_PATH", path, 1) < 0) {
        perror("netdirect-run: setenv");
        return 127;
    }
    publish_device_tree(dir);
    execvp(argv[1], argv + 1);
    fprintf(stderr, "netdirect-run: %s: %s\n", argv[1], strerror(errno));
    return errno == ENOENT ? 127 : 126;
}
