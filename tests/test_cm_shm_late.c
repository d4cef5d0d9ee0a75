// SPDX-License-Identifier: MIT
/*
 * A same-host dialer that catches the listener between its shm bind and its shm listen
 * (the listener opens shm first, then TCP) must still end up on shm: the kernel answers such
 * a dial ECONNREFUSED, exactly as when nobody listens, so the dialer goes on to TCP, and
 * the core then asks shm once more (cm.c dial()). The window is microseconds wide; this test
 * makes it certain by answering the client's first shm dial ECONNREFUSED itself, through
 * a connect() of its own that the library's calls reach first. The connection must come
 * up on shm (the TCP socket closed, not ESTABLISHED) and carry a Send each way.
 */
#include "t_conn.h"

#include <dlfcn.h>
#include <errno.h>
#include <stddef.h>
#include <sys/un.h>

static int unix_dials, refused_dials, inet_dials;  /* atomics: a dial may run on a CM thread */

static bool is_rendezvous(const struct sockaddr *sa, socklen_t len)
{
    static const char prefix[] = "netdirect/";
    const struct sockaddr_un *un = (const struct sockaddr_un *)sa;
    size_t at = offsetof(struct sockaddr_un, sun_path);

    return sa->sa_family == AF_UNIX && len > at + sizeof(prefix) && un->sun_path[0] == '\0' &&
           memcmp(un->sun_path + 1, prefix, sizeof(prefix) - 1) == 0;
}

/* Seen before libc's (an executable's definitions come first in symbol lookup). */
int connect(int fd, const struct sockaddr *sa, socklen_t len)
{
    int (*real)(int, const struct sockaddr *, socklen_t);

    *(void **)&real = dlsym(RTLD_NEXT, "connect");
    if (!real) {
        errno = ENOSYS;
        return -1;
    }
    if (is_rendezvous(sa, len)) {
        __atomic_add_fetch(&unix_dials, 1, __ATOMIC_RELAXED);
        int zero = 0;

        /* The first one only: a name bound, not yet listening. */
        if (__atomic_compare_exchange_n(&refused_dials, &zero, 1, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
            errno = ECONNREFUSED;
            return -1;
        }
    } else if (sa->sa_family == AF_INET) {
        __atomic_add_fetch(&inet_dials, 1, __ATOMIC_RELAXED);
    }
    return real(fd, sa, len);
}

/* ESTABLISHED TCP sockets in this namespace whose remote port is @port: the client's end
 * of a connection to the server (the server's ends have @port as their local port). */
static int established_to(uint16_t port)
{
    FILE *f = fopen("/proc/net/tcp", "r");
    char line[512];
    unsigned rport, state;
    int n = 0;

    CHECK(f != NULL);
    CHECK(fgets(line, sizeof(line), f) != NULL);        /* the header */
    while (fgets(line, sizeof(line), f))
        if (sscanf(line, "%*s %*x:%*x %*x:%x %x", &rport, &state) == 2 && rport == port && state == 0x01)
            n++;
    fclose(f);
    return n;
}

static void exchange(struct t_side *s, char me, char peer)
{
    nd_sge rsge = { s->buf, 64, s->token }, ssge = { s->buf + 64, 1, s->token };
    nd_result r;

    s->buf[64] = (uint8_t)me;
    CHECK_ST(nd_qp_receive(s->qp, NULL, &rsge, 1), ND_SUCCESS);
    CHECK_ST(nd_qp_send(s->qp, NULL, &ssge, 1, 0), ND_SUCCESS);
    for (int got = 0; got < 2; got++) {
        r = t_poll_one(s->cq, 10000);
        CHECK_ST(r.status, ND_SUCCESS);
        if (r.request_type == ND_REQUEST_TYPE_RECEIVE)
            CHECK(r.bytes_transferred == 1 && s->buf[0] == (uint8_t)peer);
    }
}

static int done_pipe[2];

static void serve(int port_pipe)
{
    struct t_side s;
    char c;

    close(done_pipe[1]);
    t_serve_open(&s, port_pipe);
    t_accept(&s, 0, NULL, 0);
    exchange(&s, 's', 'c');
    CHECK(read(done_pipe[0], &c, 1) == 0);
    t_side_close(&s);
}

int main(void)
{
    struct t_side s;
    uint16_t port;
    int rd;

    if (getenv("ND_TRANSPORT"))
        return 77;                  /* one transport: there is nothing to fall back from */
    CHECK(pipe(done_pipe) == 0);
    pid_t server = t_fork_server(serve, &rd);

    close(done_pipe[0]);
    CHECK(read(rd, &port, sizeof(port)) == sizeof(port));
    t_side_open(&s, 4096, 4, 1);
    t_connect(&s, port, NULL, NULL);
    /* The refused shm dial, TCP reached, and shm asked again, which answered. */
    CHECK(__atomic_load_n(&refused_dials, __ATOMIC_RELAXED) == 1);
    CHECK(__atomic_load_n(&inet_dials, __ATOMIC_RELAXED) >= 1);
    CHECK(__atomic_load_n(&unix_dials, __ATOMIC_RELAXED) >= 2);
    if (established_to(port) != 0) {
        fprintf(stderr, "the connection stayed on TCP\n");
        return 1;
    }
    exchange(&s, 'c', 's');
    close(done_pipe[1]);
    t_expect_child_ok(server);
    t_side_close(&s);
    return 0;
}
