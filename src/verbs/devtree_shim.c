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
#include <unistd.h>

#define SHIM_API __attribute__((visibility("default")))

static const char *tree;    /* ND_DEVICE_TREE, read once at load; NULL: pass everything */

__attribute__((constructor)) static void shim_init(void)
{
    const char *t = getenv("ND_DEVICE_TREE");

    tree = t && t[0] == '/' ? t : NULL;
}

/* @path's place in the tree, in @buf; @path itself when it is not the device's. */
static const char *in_tree(const char *path, char *buf, size_t len)
{
    static const char *const dirs[] = { "/sys/class/infiniband", "/sys/class/infiniband_verbs",
                                        "/sys/class/infiniband_mad", "/dev/infiniband" };

    if (!tree || !path || path[0] != '/')
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

static mode_t mode_arg(int flags, va_list ap)
{
    return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE ? (mode_t)va_arg(ap, int) : 0;
}

SHIM_API int open(const char *path, int flags, ...)
{
    va_list ap;
    TREE_PATH(path);

    va_start(ap, flags);
    mode_t m = mode_arg(flags, ap);
    va_end(ap);
    return NEXT(open)(path_t, flags, m);
}

SHIM_API int open64(const char *path, int flags, ...)
{
    va_list ap;
    TREE_PATH(path);

    va_start(ap, flags);
    mode_t m = mode_arg(flags, ap);
    va_end(ap);
    return NEXT(open64)(path_t, flags, m);
}

SHIM_API int openat(int dirfd, const char *path, int flags, ...)
{
    va_list ap;
    TREE_PATH(path);

    va_start(ap, flags);
    mode_t m = mode_arg(flags, ap);
    va_end(ap);
    return NEXT(openat)(dirfd, path_t, flags, m);
}

SHIM_API int openat64(int dirfd, const char *path, int flags, ...)
{
    va_list ap;
    TREE_PATH(path);

    va_start(ap, flags);
    mode_t m = mode_arg(flags, ap);
    va_end(ap);
    return NEXT(openat64)(dirfd, path_t, flags, m);
}

/* The fortified entry points a program built with _FORTIFY_SOURCE calls instead. */
int __open_2(const char *path, int flags);
int __open64_2(const char *path, int flags);
int __openat_2(int dirfd, const char *path, int flags);
int __openat64_2(int dirfd, const char *path, int flags);

SHIM_API int __open_2(const char *path, int flags)
{
    TREE_PATH(path);
    return NEXT(__open_2)(path_t, flags);
}

SHIM_API int __open64_2(const char *path, int flags)
{
    TREE_PATH(path);
    return NEXT(__open64_2)(path_t, flags);
}

SHIM_API int __openat_2(int dirfd, const char *path, int flags)
{
    TREE_PATH(path);
    return NEXT(__openat_2)(dirfd, path_t, flags);
}

SHIM_API int __openat64_2(int dirfd, const char *path, int flags)
{
    TREE_PATH(path);
    return NEXT(__openat64_2)(dirfd, path_t, flags);
}

SHIM_API FILE *fopen(const char *path, const char *mode)
{
    TREE_PATH(path);
    return NEXT(fopen)(path_t, mode);
}

SHIM_API FILE *fopen64(const char *path, const char *mode)
{
    TREE_PATH(path);
    return NEXT(fopen64)(path_t, mode);
}

SHIM_API int stat(const char *path, struct stat *st)
{
    TREE_PATH(path);
    return NEXT(stat)(path_t, st);
}

SHIM_API int stat64(const char *path, struct stat64 *st)
{
    TREE_PATH(path);
    return NEXT(stat64)(path_t, st);
}

SHIM_API int lstat(const char *path, struct stat *st)
{
    TREE_PATH(path);
    return NEXT(lstat)(path_t, st);
}

SHIM_API int lstat64(const char *path, struct stat64 *st)
{
    TREE_PATH(path);
    return NEXT(lstat64)(path_t, st);
}

SHIM_API int fstatat(int dirfd, const char *path, struct stat *st, int flags)
{
    TREE_PATH(path);
    return NEXT(fstatat)(dirfd, path_t, st, flags);
}

SHIM_API int fstatat64(int dirfd, const char *path, struct stat64 *st, int flags)
{
    TREE_PATH(path);
    return NEXT(fstatat64)(dirfd, path_t, st, flags);
}

SHIM_API int statx(int dirfd, const char *path, int flags, unsigned int mask, struct statx *st)
{
    TREE_PATH(path);
    return NEXT(statx)(dirfd, path_t, flags, mask, st);
}

/* glibc before 2.33 had programs call these for stat, lstat and fstatat. */
int __xstat(int ver, const char *path, struct stat *st);
int __xstat64(int ver, const char *path, struct stat64 *st);
int __lxstat(int ver, const char *path, struct stat *st);
int __lxstat64(int ver, const char *path, struct stat64 *st);
int __fxstatat(int ver, int dirfd, const char *path, struct stat *st, int flags);
int __fxstatat64(int ver, int dirfd, const char *path, struct stat64 *st, int flags);

SHIM_API int __xstat(int ver, const char *path, struct stat *st)
{
    TREE_PATH(path);
    return NEXT(__xstat)(ver, path_t, st);
}

SHIM_API int __xstat64(int ver, const char *path, struct stat64 *st)
{
    TREE_PATH(path);
    return NEXT(__xstat64)(ver, path_t, st);
}

SHIM_API int __lxstat(int ver, const char *path, struct stat *st)
{
    TREE_PATH(path);
    return NEXT(__lxstat)(ver, path_t, st);
}

SHIM_API int __lxstat64(int ver, const char *path, struct stat64 *st)
{
    TREE_PATH(path);
    return NEXT(__lxstat64)(ver, path_t, st);
}

SHIM_API int __fxstatat(int ver, int dirfd, const char *path, struct stat *st, int flags)
{
    TREE_PATH(path);
    return NEXT(__fxstatat)(ver, dirfd, path_t, st, flags);
}

SHIM_API int __fxstatat64(int ver, int dirfd, const char *path, struct stat64 *st, int flags)
{
    TREE_PATH(path);
    return NEXT(__fxstatat64)(ver, dirfd, path_t, st, flags);
}

SHIM_API int access(const char *path, int mode)
{
    TREE_PATH(path);
    return NEXT(access)(path_t, mode);
}

SHIM_API int faccessat(int dirfd, const char *path, int mode, int flags)
{
    TREE_PATH(path);
    return NEXT(faccessat)(dirfd, path_t, mode, flags);
}

SHIM_API int euidaccess(const char *path, int mode)
{
    TREE_PATH(path);
    return NEXT(euidaccess)(path_t, mode);
}

SHIM_API int eaccess(const char *path, int mode)
{
    TREE_PATH(path);
    return NEXT(eaccess)(path_t, mode);
}

SHIM_API DIR *opendir(const char *path)
{
    TREE_PATH(path);
    return NEXT(opendir)(path_t);
}

SHIM_API ssize_t readlink(const char *path, char *out, size_t len)
{
    TREE_PATH(path);
    return NEXT(readlink)(path_t, out, len);
}

SHIM_API ssize_t readlinkat(int dirfd, const char *path, char *out, size_t len)
{
    TREE_PATH(path);
    return NEXT(readlinkat)(dirfd, path_t, out, len);
}

SHIM_API char *realpath(const char *path, char *out)
{
    TREE_PATH(path);
    return NEXT(realpath)(path_t, out);
}
