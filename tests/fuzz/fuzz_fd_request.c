// SPDX-License-Identifier: MIT
/*
 * libFuzzer target: a request for a descriptor (core/fd_share.c), as any process of our uid
 * may send one to a process that hands descriptors over. One memfd is published, another
 * is not. Whatever the bytes: the only descriptor ever granted is the published one, and
 * only to a request of the exact size that names its number, device and inode.
 */
#include "core/core.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

struct request {
    uint32_t magic;
    int32_t fd;
    uint64_t dev, ino;
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct nd_fd_ref published;
    static int secret = -1;
    struct request r;

    if (secret < 0) {
        int fd = memfd_create("netdirect-fuzz", MFD_CLOEXEC);

        secret = memfd_create("not-published", MFD_CLOEXEC);
        if (fd < 0 || secret < 0 || !nd_fd_ref_of(fd, &published))
            abort();
    }
    int granted = nd_fd_request_grant(data, size);

    if (granted < 0)
        return 0;
    if (size != sizeof(r))
        abort();
    memcpy(&r, data, sizeof(r));
    if (granted != published.fd || r.fd != published.fd || r.dev != published.dev || r.ino != published.ino)
        abort();
    return 0;
}
