// SPDX-License-Identifier: MIT
/*
 * Ports a connector reserves for Bind with port 0 go back to the adapter when it closes and
 * serve the next such connector (no new reservation); a port in use is never handed out
 * twice, and a port named in Bind is the application's: never kept or handed on.
 */
#include "t_util.h"

#include <unistd.h>

static uint16_t local_port(nd_connector *c)
{
    struct sockaddr_in sin;
    uint32_t len = sizeof(sin);

    CHECK_ST(nd_connector_get_local_address(c, (struct sockaddr *)&sin, &len), ND_SUCCESS);
    CHECK(len == sizeof(sin) && sin.sin_port != 0);
    return ntohs(sin.sin_port);
}

static nd_connector *bound(nd_adapter *a, nd_port *port, uint16_t p)
{
    struct sockaddr_in sin = t_ipv4(t_my_ip(), p);
    nd_connector *c;

    CHECK_ST(nd_adapter_create_connector(a, port, &c), ND_SUCCESS);
    CHECK_ST(nd_connector_bind(c, (struct sockaddr *)&sin, sizeof(sin)), ND_SUCCESS);
    return c;
}

/* A port nobody holds: the kernel's pick, released at once. */
static uint16_t free_port(void)
{
    struct sockaddr_in sin = t_ipv4(t_my_ip(), 0);
    socklen_t len = sizeof(sin);
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    CHECK(fd >= 0 && bind(fd, (struct sockaddr *)&sin, sizeof(sin)) == 0);
    CHECK(getsockname(fd, (struct sockaddr *)&sin, &len) == 0);
    close(fd);
    return ntohs(sin.sin_port);
}

int main(void)
{
    nd_adapter *a = t_open_loopback();
    nd_port *port;

    CHECK_ST(nd_port_create(&port), ND_SUCCESS);
    nd_connector *x = bound(a, port, 0), *y = bound(a, port, 0);
    uint16_t px = local_port(x), py = local_port(y);

    CHECK(px != py);
    CHECK_ST(nd_connector_close(x), ND_SUCCESS);
    nd_connector *z = bound(a, port, 0);
    CHECK(local_port(z) == px);                 /* x's port, kept bound for the next */
    nd_connector *w = bound(a, port, 0);
    CHECK(local_port(w) != px && local_port(w) != py);   /* held ports are not shared */

    /* A named port goes back to the system, not to the spares. */
    uint16_t named = free_port();
    nd_connector *n = bound(a, port, named);
    CHECK(local_port(n) == named);
    CHECK_ST(nd_connector_close(n), ND_SUCCESS);
    nd_connector *m = bound(a, port, 0);
    CHECK(local_port(m) != named);
    nd_connector *again = bound(a, port, named);    /* free again at once */
    CHECK(local_port(again) == named);

    CHECK_ST(nd_connector_close(again), ND_SUCCESS);
    CHECK_ST(nd_connector_close(m), ND_SUCCESS);
    CHECK_ST(nd_connector_close(w), ND_SUCCESS);
    CHECK_ST(nd_connector_close(z), ND_SUCCESS);
    CHECK_ST(nd_connector_close(y), ND_SUCCESS);
    CHECK_ST(nd_port_close(port), ND_SUCCESS);
    CHECK_ST(nd_adapter_close(a), ND_SUCCESS);
    return 0;
}
