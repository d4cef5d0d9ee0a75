// SPDX-License-Identifier: MIT
/* nd_info: the served addresses, every adapter-info field per adapter, and every knob. */
#include <netdirect/netdirect.h>
#include "nd_smaps.h"

#include <arpa/inet.h>
#include <linux/membarrier.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *addr_str(const struct sockaddr *sa, char *buf, size_t len)
{
    const void *src = sa->sa_family == AF_INET ? (const void *)&((const struct sockaddr_in *)sa)->sin_addr
                                               : (const void *)&((const struct sockaddr_in6 *)sa)->sin6_addr;

    return inet_ntop(sa->sa_family, src, buf, (socklen_t)len) ? buf : "?";
}

static nd_address_list *query_addresses(void)
{
    uint32_t size = 0;
    nd_address_list *list = NULL;
    nd_status st;

    /* Size probe, then fetch; the list may grow in between, so loop. */
    while ((st = nd_query_address_list(list, &size)) == ND_BUFFER_OVERFLOW) {
        free(list);
        list = malloc(size);
        if (!list)
            return NULL;
    }
    if (st != ND_SUCCESS) {
        fprintf(stderr, "nd_query_address_list: %s\n", nd_strerror(st));
        free(list);
        return NULL;
    }
    return list;
}

static void print_flags(uint32_t flags)
{
    static const struct { uint32_t bit; const char *name; } names[] = {
        { ND_ADAPTER_FLAG_IN_ORDER_DMA_SUPPORTED, "IN_ORDER_DMA" },
        { ND_ADAPTER_FLAG_CQ_INTERRUPT_MODERATION_SUPPORTED, "CQ_INTERRUPT_MODERATION" },
        { ND_ADAPTER_FLAG_MULTI_ENGINE_SUPPORTED, "MULTI_ENGINE" },
        { ND_ADAPTER_FLAG_CQ_RESIZE_SUPPORTED, "CQ_RESIZE" },
        { ND_ADAPTER_FLAG_LOOPBACK_CONNECTIONS_SUPPORTED, "LOOPBACK_CONNECTIONS" },
    };

    printf("  %-32s 0x%08x", "AdapterFlags", flags);
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (flags & names[i].bit)
            printf(" %s", names[i].name);
    printf("\n");
}

static void print_info(const nd_adapter_info *i)
{
#define U(label, v) printf("  %-32s %llu\n", label, (unsigned long long)(v))
    printf("  %-32s 0x%x\n", "InfoVersion", i->info_version);
    printf("  %-32s 0x%04x\n", "VendorId", i->vendor_id);
    printf("  %-32s 0x%04x\n", "DeviceId", i->device_id);
    printf("  %-32s 0x%016llx\n", "AdapterId", (unsigned long long)i->adapter_id);
    U("MaxRegistrationSize", i->max_registration_size);
    U("MaxWindowSize", i->max_window_size);
    U("MaxInitiatorSge", i->max_initiator_sge);
    U("MaxReceiveSge", i->max_receive_sge);
    U("MaxReadSge", i->max_read_sge);
    U("MaxTransferLength", i->max_transfer_length);
    U("MaxInlineDataSize", i->max_inline_data_size);
    U("MaxInboundReadLimit", i->max_inbound_read_limit);
    U("MaxOutboundReadLimit", i->max_outbound_read_limit);
    U("MaxReceiveQueueDepth", i->max_receive_queue_depth);
    U("MaxInitiatorQueueDepth", i->max_initiator_queue_depth);
    U("MaxSharedReceiveQueueDepth", i->max_shared_receive_queue_depth);
    U("MaxCompletionQueueDepth", i->max_completion_queue_depth);
    U("InlineRequestThreshold", i->inline_request_threshold);
    U("LargeRequestThreshold", i->large_request_threshold);
    U("MaxCallerData", i->max_caller_data);
    U("MaxCalleeData", i->max_callee_data);
    print_flags(i->adapter_flags);
#undef U
}

static int show_adapter(const struct sockaddr *sa, int len, uint64_t *seen, int *nseen)
{
    nd_adapter_info info = { .info_version = ND_VERSION_2 };
    uint32_t size = sizeof(info);
    nd_adapter *adapter;
    uint64_t id;
    nd_status st = nd_resolve_address(sa, (uint32_t)len, &id);

    if (st != ND_SUCCESS)
        return fprintf(stderr, "nd_resolve_address: %s\n", nd_strerror(st)), 1;
    for (int i = 0; i < *nseen; i++)
        if (seen[i] == id)
            return 0;
    seen[(*nseen)++] = id;
    st = nd_open_adapter(id, &adapter);
    if (st == ND_SUCCESS)
        st = nd_adapter_query(adapter, &info, &size);
    if (st != ND_SUCCESS)
        return fprintf(stderr, "adapter 0x%016llx: %s\n", (unsigned long long)id, nd_strerror(st)), 1;
    printf("\nadapter 0x%016llx\n", (unsigned long long)id);
    print_info(&info);
    nd_adapter_close(adapter);
    return 0;
}

/* A number from a /proc file (the first one in it), or -1. */
static long proc_number(const char *path, const char *key)
{
    char line[256];
    long v = -1;
    FILE *f = fopen(path, "r");

    if (!f)
        return -1;
    while (v < 0 && fgets(line, sizeof(line), f))
        if (!key)
            v = strtol(line, NULL, 10);
        else if (!strncmp(line, key, strlen(key)))
            v = strtol(line + strlen(key), NULL, 10);
    fclose(f);
    return v;
}

/* Why a call the shm transport makes was refused with @err: the rule that says no. */
static const char *refusal_reason(int err, bool ptrace_rule)
{
    static char why[160];
    long yama = proc_number("/proc/sys/kernel/yama/ptrace_scope", NULL);
    long seccomp = proc_number("/proc/self/status", "Seccomp:");

    if (err == ENOSYS)
        snprintf(why, sizeof(why), "%s", seccomp == 2 ? "a seccomp filter" : "the kernel lacks the call");
    else if (ptrace_rule && err == EPERM && yama >= 1)
        snprintf(why, sizeof(why), "Yama ptrace_scope %ld%s", yama, seccomp == 2 ? ", or a seccomp filter" : "");
    else if (err == EPERM && seccomp == 2)
        snprintf(why, sizeof(why), "a seccomp filter");
    else
        snprintf(why, sizeof(why), "%s%s", strerror(err), ptrace_rule ? ": ptrace rules (an LSM, a non-dumpable process)" : "");
    return why;
}

/*
 * shm connection messages name descriptors the receiver fetches from its peer
 * (pidfd_getfd): where that is refused (Docker's default seccomp profile without
 * CAP_SYS_PTRACE, a kernel before 5.6), peers hand them over a unix socket (SCM_RIGHTS)
 * instead. Probe it on this process.
 */
static bool report_fd_fetch(void)
{
    long pidfd = syscall(SYS_pidfd_open, getpid(), 0);
    long fd = pidfd < 0 ? -1 : syscall(SYS_pidfd_getfd, (int)pidfd, 0, 0);
    int err = fd < 0 ? errno : 0;

    if (fd >= 0)
        close((int)fd);
    if (pidfd >= 0)
        close((int)pidfd);
    if (!err) {
        printf("  descriptor fetching (pidfd_getfd): available\n");
        return true;
    }
    printf("  descriptor fetching (pidfd_getfd): REFUSED (%s): peers pass descriptors over a unix socket"
           " (SCM_RIGHTS)\n", refusal_reason(err, true));
    return false;
}

/*
 * The shm transport moves Writes, Reads and large Sends with cross-memory attach
 * (process_vm_readv/writev), which ptrace rules (Yama ptrace_scope, non-dumpable
 * processes, LSMs) and seccomp filters may refuse. Probe the direction Yama restricts
 * first: a forked child reading its parent. Each connection probes its own peer; a peer
 * out of reach finishes those transfers itself (the bounce path: two copies through a
 * channel both map, its agent thread doing the second).
 */
static void report_cma(void)
{
    static volatile char probe[8] = "netdir";
    int p[2], status = 0;
    pid_t parent = getpid(), pid;

    if (pipe(p) < 0 || (pid = fork()) < 0) {
        printf("  cross-memory attach: unknown (cannot fork a probe)\n");
        return;
    }
    if (pid == 0) {
        char got[8] = { 0 };
        struct iovec local = { got, sizeof(got) }, remote = { (void *)probe, sizeof(probe) };
        ssize_t n = process_vm_readv(parent, &local, 1, &remote, 1, 0);
        int err = n < 0 ? errno : 0;

        if (write(p[1], &err, sizeof(err)) < 0)
            _exit(1);
        _exit(n == (ssize_t)sizeof(got) && !strcmp(got, "netdir") ? 0 : 1);
    }
    close(p[1]);
    int err = 0;
    if (read(p[0], &err, sizeof(err)) != (ssize_t)sizeof(err))
        err = EIO;
    close(p[0]);
    waitpid(pid, &status, 0);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
        printf("  cross-memory attach: available between peers (Write, Read and large Sends move in one call)\n");
    else
        printf("  cross-memory attach: REFUSED between unrelated peers (%s): shm still carries such\n"
               "    connections, Writes, Reads and large Sends by the bounce path (two copies through a\n"
               "    channel both map; each connection probes its peer)\n",
               err ? refusal_reason(err, true) : "short read");
}

/* Queue pair and CQ locks a single thread keeps taking go without atomic instructions;
 * revoking that needs membarrier(2) (see ND_LOCK_BIAS below). */
static void report_lock_bias(void)
{
    long cmds = syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
    const char *knob = getenv("ND_LOCK_BIAS");

    if (knob && !strcmp(knob, "0"))
        printf("  data-path locks: plain mutexes (ND_LOCK_BIAS=0)\n");
    else if (cmds > 0 && (cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED))
        printf("  data-path locks: biased to a thread that takes them alone (membarrier available)\n");
    else
        printf("  data-path locks: plain mutexes (membarrier unavailable)\n");
}

/* Registered ordinary memory's whole 2 MiB blocks become huge pages (ND_MR_HUGE_PAGES): can
 * this kernel collapse? One block of a scratch mapping with one page resident is tried. */
static void report_huge_pages(void)
{
    const char *knob = getenv("ND_MR_HUGE_PAGES");
    size_t block = 2u << 20;
    char *scratch;

    if (knob && !strcmp(knob, "0")) {
        printf("  registered memory: left on its pages (ND_MR_HUGE_PAGES=0)\n");
        return;
    }
    scratch = mmap(NULL, 2 * block, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (scratch == MAP_FAILED) {
        printf("  registered memory: huge pages unknown (no scratch mapping)\n");
        return;
    }
    uint8_t *aligned = tool_huge_align_up(scratch);
    aligned[0] = 1;
    if (madvise(aligned, block, 25 /* MADV_COLLAPSE */) == 0)
        printf("  registered memory: whole 2 MiB blocks of ordinary memory become huge pages after Register\n"
               "    (MADV_COLLAPSE, in a thread of the adapter): a peer's Write or Read pins one page per block\n");
    else
        printf("  registered memory: stays on 4 KiB pages (MADV_COLLAPSE: %s)\n", strerror(errno));
    munmap(scratch, 2 * block);
}

int main(int argc, char **argv)
{
    nd_address_list *list = query_addresses();
    uint64_t seen[256];
    int nseen = 0, rc = 0;
    char buf[INET6_ADDRSTRLEN];

    (void)argc;
    (void)argv;
    printf("netdirect %s\n\naddresses\n", nd_version_string());
    if (!list)
        return 1;
    for (int i = 0; i < list->address_count; i++)
        printf("  %s\n", addr_str(list->address[i].sockaddr, buf, sizeof(buf)));
    for (int i = 0; i < list->address_count && nseen < 256; i++)
        rc |= show_adapter(list->address[i].sockaddr, list->address[i].sockaddr_length, seen, &nseen);
    printf("\ntransports\n  shm: same host, same network namespace and uid, memory reachable both ways\n");
    report_fd_fetch();
    report_cma();
    printf("  iwarp: every other peer (TCP, MPA rev 2, DDP/RDMAP as Linux siw speaks them)\n");
    report_lock_bias();
    report_huge_pages();
    printf("\nenvironment\n");
    for (uint32_t i = 0; i < nd_config_count(); i++) {
        nd_config_knob k;

        if (nd_config_get(i, &k) == ND_SUCCESS)
            printf("  %-14s = %-8s (default %s) %s\n", k.name, k.value, k.default_value, k.description);
    }
    free(list);
    return rc;
}
