// SPDX-License-Identifier: MIT
/*
 * A peer's token-table entry says where its memory can be mapped (nd_alloc_memory); the
 * initiator trusts none of it. The server forges entries over an ordinary buffer: they
 * name an unsealed regular file, /dev/null, a sealed memfd smaller than claimed, and a real
 * allocation that does not hold the region. Every Write must still land in the buffer
 * (by cross-memory call) and none of the named files may change.
 */
#include "t_conn.h"
#include <netdirect/netdirect.h>
#include "core/mem_int.h"

#include <fcntl.h>
#include <sys/stat.h>

#define BUF (64u << 10)
#define CASES 4
#define LEN 4096u

struct forged {
    uint32_t token;
    uint64_t addr;
};

static int to_client[2], to_server[2];

static uint8_t pattern(uint32_t k, uint32_t i)
{
    return (uint8_t)(k * 71 + i * 3 + 1);
}

static uint64_t ino_of(int fd)
{
    struct stat st;

    CHECK(fstat(fd, &st) == 0);
    return (uint64_t)st.st_ino;
}

/* An entry over [buf, buf + BUF) that names @share; its remote token. */
static uint32_t forge(struct t_side *s, const struct nd_mtab_share *share)
{
    uint32_t index;

    CHECK_ST(nd_mtab_alloc(s->a, ND_MTAB_MR, &index), ND_SUCCESS);
    return nd_mtab_publish(s->a, index, (uintptr_t)s->buf, BUF,
                           ND_MR_FLAG_ALLOW_REMOTE_WRITE | ND_MR_FLAG_ALLOW_LOCAL_WRITE, share, ND_KEY_NEXT, 0);
}

static bool all_zero(const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i])
            return false;
    return true;
}

static void server(int port_pipe)
{
    struct t_side s;
    char tmpl[] = "/tmp/nd-share-XXXXXX", c;
    int file = mkstemp(tmpl), null = open("/dev/null", O_RDWR | O_CLOEXEC);
    int small = nd_memfd_sealed("small", 4096);
    void *alloc;
    uint16_t port;

    /* Our ends only: a dead client then reads as EOF here, and a dead server there. */
    close(to_client[0]);
    close(to_server[1]);
    CHECK(file >= 0 && null >= 0 && small >= 0 && unlink(tmpl) == 0 && ftruncate(file, BUF) == 0);
    CHECK_ST(nd_alloc_memory(8192, &alloc), ND_SUCCESS);
    t_side_open(&s, BUF, 8, 2);
    port = t_listen(&s);
    CHECK(write(port_pipe, &port, sizeof(port)) == sizeof(port));
    t_accept(&s, 8, NULL, 0);

    /* The allocation's real descriptor is not known here: find it by its inode. */
    int alloc_fd = -1;
    for (int fd = 3; fd < 1024 && alloc_fd < 0; fd++) {
        struct stat st;
        char link[64], target[128];
        ssize_t n;

        snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
        n = readlink(link, target, sizeof(target) - 1);
        if (n > 0 && fstat(fd, &st) == 0) {
            target[n] = 0;
            if (strstr(target, "netdirect-shared"))
                alloc_fd = fd;
        }
    }
    CHECK(alloc_fd >= 0);
    const struct nd_mtab_share cases[CASES] = {
        { .ino = ino_of(file), .base = (uintptr_t)s.buf, .size = BUF, .fd = file },
        { .ino = ino_of(null), .base = (uintptr_t)s.buf, .size = BUF, .fd = null },
        { .ino = ino_of(small), .base = (uintptr_t)s.buf, .size = 1u << 30, .fd = small },
        { .ino = ino_of(alloc_fd), .base = (uintptr_t)alloc, .size = 8192, .fd = alloc_fd },
    };
    for (uint32_t k = 0; k < CASES; k++) {
        struct forged f = { forge(&s, &cases[k]), (uintptr_t)s.buf + k * LEN };

        CHECK(write(to_client[1], &f, sizeof(f)) == sizeof(f));
        CHECK(read(to_server[0], &c, 1) == 1);
        for (uint32_t i = 0; i < LEN; i++)
            CHECK(s.buf[k * LEN + i] == pattern(k, i));
    }
    uint8_t back[BUF];
    CHECK(pread(file, back, BUF, 0) == BUF && all_zero(back, BUF));
    CHECK(pread(small, back, 4096, 0) == 4096 && all_zero(back, 4096));
    CHECK(all_zero(alloc, 8192));
    t_side_close(&s);
    CHECK_ST(nd_free_memory(alloc), ND_SUCCESS);
}

int main(void)
{
    struct t_side s;
    struct forged f;
    uint16_t port;
    int pp;
    pid_t pid;

    CHECK(pipe(to_client) == 0 && pipe(to_server) == 0);
    pid = t_fork_server(server, &pp);
    close(to_client[1]);
    close(to_server[0]);
    t_side_open(&s, BUF, 8, 2);
    CHECK(read(pp, &port, sizeof(port)) == sizeof(port));
    t_connect(&s, port, NULL, NULL);
    for (uint32_t k = 0; k < CASES; k++) {
        nd_sge w = { s.buf, LEN, s.token };

        CHECK(read(to_client[0], &f, sizeof(f)) == sizeof(f));
        for (uint32_t i = 0; i < LEN; i++)
            s.buf[i] = pattern(k, i);
        CHECK_ST(nd_qp_write(s.qp, NULL, &w, 1, f.addr, f.token, 0), ND_SUCCESS);
        nd_result r = t_poll_one(s.cq, 5000);
        CHECK(r.status == ND_SUCCESS && r.request_type == ND_REQUEST_TYPE_WRITE);
        CHECK(write(to_server[1], "d", 1) == 1);
    }
    t_expect_child_ok(pid);
    t_side_close(&s);
    puts("forged shareable-memory entries: every Write landed in the region, no file touched: ok");
    return 0;
}
