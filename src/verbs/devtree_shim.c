// SPDX-License-Identifier: MIT
/*
 * libnetdirect-devtree.so, preloaded by netdirect-run: the device tree (devtree.c) at the
 * paths programs look in, /sys/class/infiniband{,_verbs,_mad} and /dev/infiniband, with no
 * root, no mount and no kernel module, so that it works in an unprivileged container too.
 * It takes the libc calls that name a path and, for a path under one of those directories,
 * names the tree's file instead; every other path passes untouched. Programs that look with
 * a call not taken here (a raw system call, a directory descriptor and a relative name)
 * find no device there, as on a host without RDMA.
 */
#undef _FORTIFY_SOURCE
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#define SHIM_API __attribute__((visibility("default")))

static char tree[PATH_MAX]; /* ND_DEVICE_TREE/<personality>, fixed at load; "": pass everything */

/* The tree of this program's personality: ND_VERBS_PERSONALITY "iwarp", or else "roce", as
 * libibverbs reads it (vb_personality). */
__attribute__((constructor)) static void shim_init(void)
{
    const char *t = getenv("ND_DEVICE_TREE"), *p = getenv("ND_VERBS_PERSONALITY");
    int n;

    if (!t || t[0] != '/')
        return;
    n = snprintf(tree, sizeof(tree), "%s/%s", t, p && !strcmp(p, "iwarp") ? "iwarp" : "roce");
    if (n < 0 || (size_t)n >= sizeof(tree))
        tree[0] = 0;
}

/* @path's place in the tree, in @buf; @path itself when it is not the device's. */
static const char *in_tree(const char *path, char *buf, size_t len)
{
    static const char *const dirs[] = { "/sys/class/infiniband", "/sys/class/infiniband_verbs",
                                        "/sys/class/infiniband_mad", "/dev/infiniband" };

    if (!tree[0] || !path || path[0] != '/')
        return path;
    for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
        size_t n = strlen(dirs[i]);

        if (!strncmp(path, dirs[i], n) && (path[n] == 0 || path[n] == '/')) {
            int w = snprintf(buf, len, "%s%s", tree, path);

            return w > 0 && (size_t)w < len ? buf : path;
        }
    }
    return path;
}

#define NEXT(name) ((__typeof__(&name))dlsym(RTLD_NEXT, #name))
#define TREE_PATH(p) char buf_[PATH_MAX]; const char *p##_t = in_tree(p, buf_, sizeof(buf_))
/* A call whose argument @path names a file: the same call with the tree's name for it. */
#define PATH_CALL(ret, name, params, args)  \
    SHIM_API ret name params                \
    {                                       \
        TREE_PATH(path);                    \
        return NEXT(name) args;             \
    }

/* open and its kin: their mode argument is there only with O_CREAT or O_TMPFILE. */
#define OPEN_CALL(name, params, args)                                                        \
    SHIM_API int name params                                                                 \
    {                                                                                        \
        va_list ap;                                                                          \
        mode_t m = 0;                                                                        \
        TREE_PATH(path);                                                                     \
                                                                                             \
        va_start(ap, flags);                                                                 \
        if ((flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE)                           \
            m = (mode_t)va_arg(ap, int);                                                     \
        va_end(ap);                                                                          \
        return NEXT(name) args;                                                              \
    }

OPEN_CALL(open, (const char *path, int flags, ...), (path_t, flags, m))

OPEN_CALL(open64, (const char *path, int flags, ...), (path_t, flags, m))

OPEN_CALL(openat, (int dirfd, const char *path, int flags, ...), (dirfd, path_t, flags, m))

OPEN_CALL(openat64, (int dirfd, const char *path, int flags, ...), (dirfd, path_t, flags, m))

/* The fortified entry points a program built with _FORTIFY_SOURCE calls instead. */
int __open_2(const char *path, int flags);
int __open64_2(const char *path, int flags);
int __openat_2(int dirfd, const char *path, int flags);
int __openat64_2(int dirfd, const char *path, int flags);

PATH_CALL(int, __open_2, (const char *path, int flags), (path_t, flags))

PATH_CALL(int, __open64_2, (const char *path, int flags), (path_t, flags))

PATH_CALL(int, __openat_2, (int dirfd, const char *path, int flags), (dirfd, path_t, flags))

PATH_CALL(int, __openat64_2, (int dirfd, const char *path, int flags), (dirfd, path_t, flags))

PATH_CALL(FILE *, fopen, (const char *path, const char *mode), (path_t, mode))

PATH_CALL(FILE *, fopen64, (const char *path, const char *mode), (path_t, mode))

PATH_CALL(int, stat, (const char *path, struct stat *st), (path_t, st))

PATH_CALL(int, stat64, (const char *path, struct stat64 *st), (path_t, st))

PATH_CALL(int, lstat, (const char *path, struct stat *st), (path_t, st))

PATH_CALL(int, lstat64, (const char *path, struct stat64 *st), (path_t, st))

PATH_CALL(int, fstatat, (int dirfd, const char *path, struct stat *st, int flags), (dirfd, path_t, st, flags))

PATH_CALL(int, fstatat64, (int dirfd, const char *path, struct stat64 *st, int flags), (dirfd, path_t, st, flags))

PATH_CALL(int, statx, (int dirfd, const char *path, int flags, unsigned int mask, struct statx *st), (dirfd, path_t, flags, mask, st))

/* glibc before 2.33 had programs call these for stat, lstat and fstatat. */
int __xstat(int ver, const char *path, struct stat *st);
int __xstat64(int ver, const char *path, struct stat64 *st);
int __lxstat(int ver, const char *path, struct stat *st);
int __lxstat64(int ver, const char *path, struct stat64 *st);
int __fxstatat(int ver, int dirfd, const char *path, struct stat *st, int flags);
int __fxstatat64(int ver, int dirfd, const char *path, struct stat64 *st, int flags);

PATH_CALL(int, __xstat, (int ver, const char *path, struct stat *st), (ver, path_t, st))

PATH_CALL(int, __xstat64, (int ver, const char *path, struct stat64 *st), (ver, path_t, st))

PATH_CALL(int, __lxstat, (int ver, const char *path, struct stat *st), (ver, path_t, st))

PATH_CALL(int, __lxstat64, (int ver, const char *path, struct stat64 *st), (ver, path_t, st))

PATH_CALL(int, __fxstatat, (int ver, int dirfd, const char *path, struct stat *st, int flags), (ver, dirfd, path_t, st, flags))

PATH_CALL(int, __fxstatat64, (int ver, int dirfd, const char *path, struct stat64 *st, int flags), (ver, dirfd, path_t, st, flags))

PATH_CALL(int, access, (const char *path, int mode), (path_t, mode))

PATH_CALL(int, faccessat, (int dirfd, const char *path, int mode, int flags), (dirfd, path_t, mode, flags))

PATH_CALL(int, euidaccess, (const char *path, int mode), (path_t, mode))

PATH_CALL(int, eaccess, (const char *path, int mode), (path_t, mode))

PATH_CALL(DIR *, opendir, (const char *path), (path_t))

PATH_CALL(ssize_t, readlink, (const char *path, char *out, size_t len), (path_t, out, len))

PATH_CALL(ssize_t, readlinkat, (int dirfd, const char *path, char *out, size_t len), (dirfd, path_t, out, len))

PATH_CALL(char *, realpath, (const char *path, char *out), (path_t, out))

/* ls -l asks for each file's security label (libselinux) and ACL. */
PATH_CALL(ssize_t, getxattr, (const char *path, const char *name, void *value, size_t size),
          (path_t, name, value, size))

PATH_CALL(ssize_t, lgetxattr, (const char *path, const char *name, void *value, size_t size),
          (path_t, name, value, size))

PATH_CALL(ssize_t, listxattr, (const char *path, char *list, size_t size), (path_t, list, size))

PATH_CALL(ssize_t, llistxattr, (const char *path, char *list, size_t size), (path_t, list, size))
