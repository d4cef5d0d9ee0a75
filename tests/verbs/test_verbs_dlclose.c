// SPDX-License-Identifier: MIT
/*
 * A program that unloads the drop-in (Open MPI's MPI_Finalize closes its OFI component and
 * with it libfabric, librdmacm and libibverbs) must not leave the libraries' threads running
 * in unmapped code: the libraries stay loaded once loaded (-z nodelete). This loads
 * librdmacm.so.1 from the directory given, starts its CM thread and libibverbs' event thread
 * (an id bound to a device, a CQ armed on a channel), closes it with dlclose, and checks
 * that both libraries are still mapped (RTLD_NOLOAD finds them).
 * Usage: test_verbs_dlclose LIBDIR
 */
#include <dlfcn.h>
#include <infiniband/verbs.h>
#include <netinet/in.h>
#include <rdma/rdma_cma.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(c)                                                                                                   \
    do {                                                                                                           \
        if (!(c)) {                                                                                                \
            fprintf(stderr, "%s:%d: check failed: %s (%s)\n", __FILE__, __LINE__, #c, dlerror());                \
            exit(1);                                                                                               \
        }                                                                                                          \
    } while (0)

static void *sym(void *lib, const char *name)
{
    void *p = dlsym(lib, name);

    CHECK(p);
    return p;
}

/* Starts the libraries' threads and tears down what it made; the threads stay. */
static void use(void *cm)
{
    int (*create_id)(struct rdma_event_channel *, struct rdma_cm_id **, void *, enum rdma_port_space) =
        sym(cm, "rdma_create_id");
    int (*bind_addr)(struct rdma_cm_id *, struct sockaddr *) = sym(cm, "rdma_bind_addr");
    int (*listen_id)(struct rdma_cm_id *, int) = sym(cm, "rdma_listen");
    int (*destroy_id)(struct rdma_cm_id *) = sym(cm, "rdma_destroy_id");
    struct ibv_context **(*get_devices)(int *) = sym(cm, "rdma_get_devices");
    void (*free_devices)(struct ibv_context **) = sym(cm, "rdma_free_devices");
    struct rdma_event_channel *(*create_channel)(void) = sym(cm, "rdma_create_event_channel");
    void (*destroy_channel)(struct rdma_event_channel *) = sym(cm, "rdma_destroy_event_channel");
    struct ibv_comp_channel *(*create_comp)(struct ibv_context *) = sym(cm, "ibv_create_comp_channel");
    int (*destroy_comp)(struct ibv_comp_channel *) = sym(cm, "ibv_destroy_comp_channel");
    struct ibv_cq *(*create_cq)(struct ibv_context *, int, void *, struct ibv_comp_channel *, int) =
        sym(cm, "ibv_create_cq");
    int (*destroy_cq)(struct ibv_cq *) = sym(cm, "ibv_destroy_cq");
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    struct rdma_event_channel *ch = create_channel();
    struct rdma_cm_id *id;
    struct ibv_context **devs = get_devices(NULL);

    CHECK(ch && create_id(ch, &id, NULL, RDMA_PS_TCP) == 0);
    CHECK(bind_addr(id, (struct sockaddr *)&a) == 0 && listen_id(id, 1) == 0);
    CHECK(devs && devs[0]);
    struct ibv_comp_channel *cc = create_comp(devs[0]);
    struct ibv_cq *cq = cc ? create_cq(devs[0], 4, NULL, cc, 0) : NULL;
    CHECK(cq && ibv_req_notify_cq(cq, 0) == 0);
    CHECK(destroy_cq(cq) == 0 && destroy_comp(cc) == 0);
    CHECK(destroy_id(id) == 0);
    free_devices(devs);
    destroy_channel(ch);
}

int main(int argc, char **argv)
{
    char cm_path[4096], verbs_path[4096];
    void *cm;

    CHECK(argc == 2);
    snprintf(cm_path, sizeof(cm_path), "%s/librdmacm.so.1", argv[1]);
    snprintf(verbs_path, sizeof(verbs_path), "%s/libibverbs.so.1", argv[1]);
    CHECK((cm = dlopen(cm_path, RTLD_NOW | RTLD_LOCAL)) != NULL);
    use(cm);
    CHECK(dlclose(cm) == 0);
    CHECK(dlopen(cm_path, RTLD_NOW | RTLD_NOLOAD) != NULL);
    CHECK(dlopen(verbs_path, RTLD_NOW | RTLD_NOLOAD) != NULL);
    puts("ok");
    return 0;
}
