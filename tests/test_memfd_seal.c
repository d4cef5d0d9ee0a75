// SPDX-License-Identifier: MIT
/*
 * Shared regions are sealed: a peer cannot shrink (or grow) a region we map, which would
 * turn our next store into it into SIGBUS, and we refuse to map a peer's memfd that is not
 * sealed against shrinking or is shorter than its geometry says.
 */
#include "t_util.h"
#include <netdirect/netdirect.h>
#include "core/core.h"

#include <errno.h>
#include <sys/mman.h>
#include <sys/stat.h>

int main(void)
{
    struct stat st;
    int fd = nd_memfd_sealed("test", 8192);

    CHECK(fd >= 0);
    CHECK(nd_memfd_mappable(fd, 8192, &st) && st.st_size == 8192);
    CHECK(!nd_memfd_mappable(fd, 8193, &st));                 /* shorter than the geometry claims */
    CHECK(ftruncate(fd, 4096) < 0 && errno == EPERM);    /* the owner cannot shrink it either */
    CHECK(ftruncate(fd, 16384) < 0 && errno == EPERM);
    close(fd);

    int loose = memfd_create("loose", MFD_CLOEXEC);      /* a peer that kept the right to shrink */
    CHECK(loose >= 0 && ftruncate(loose, 8192) == 0);
    CHECK(!nd_memfd_mappable(loose, 4096, &st));
    close(loose);
    CHECK(!nd_memfd_mappable(-1, 1, &st));
    puts("memfd seals ok");
    return 0;
}
