// SPDX-License-Identifier: MIT
/*
 * Memory regions: every status case of the ND SDK's ndmrinvalidbuffer, tokens,
 * access flags (ALLOW_REMOTE_WRITE = 0x5), the token table's remote checks (token, range,
 * rights, stale tokens after deregistration) and memory windows as far as they exist
 * without a queue pair.
 */
#include "t_util.h"
#include <netdirect/netdirect.h>
#include "core/mem_int.h"
#include "nd/nd.h"

#include <sys/mman.h>

static nd_status check(nd_adapter *a, uint32_t token, const void *addr, uint64_t len, uint32_t need)
{
    return nd_ntstatus(nd_mtab_check(a->mtab, ND_MTAB_ENTRIES, token, (uintptr_t)addr, len, need, 0));
}

int main(void)
{
    nd_adapter *a = t_open_loopback();
    nd_port *port;
    nd_mr *mr, *mr2;
    nd_mw *mw;
    nd_overlapped ov = { 0 };
    static char buf[8192];
    long page = sysconf(_SC_PAGESIZE);

    CHECK_ST(nd_port_create(&port), ND_SUCCESS);
    CHECK_ST(nd_adapter_create_memory_region(a, NULL, &mr), ND_INVALID_PARAMETER_2);
    CHECK_ST(nd_adapter_create_memory_region(a, port, NULL), ND_INVALID_PARAMETER_3);
    CHECK_ST(nd_adapter_create_memory_region(NULL, port, &mr), ND_INVALID_HANDLE);
    CHECK_ST(nd_adapter_create_memory_region(a, port, &mr), ND_SUCCESS);
    CHECK(nd_mr_get_local_token(mr) == 0 && nd_mr_get_remote_token(mr) == 0);

    /* ndmrinvalidbuffer */
    CHECK_ST(nd_mr_register(mr, NULL, 0, ND_MR_FLAG_ALLOW_LOCAL_WRITE, &ov), ND_INVALID_PARAMETER);
    CHECK_ST(nd_mr_register(mr, buf, 0, ND_MR_FLAG_ALLOW_LOCAL_WRITE, &ov), ND_INVALID_BUFFER_SIZE);
    /* Too big, unknown flags, bad buffers. */
    CHECK_ST(nd_mr_register(mr, buf, ((size_t)1 << 40) + 1, 0, &ov), ND_INVALID_PARAMETER);
    CHECK_ST(nd_mr_register(mr, buf, sizeof(buf), 0x40, &ov), ND_INVALID_PARAMETER_3);
    CHECK_ST(nd_mr_register(mr, buf, sizeof(buf), 0, NULL), ND_INVALID_PARAMETER_4);
    CHECK_ST(nd_mr_register(mr, NULL, 16, 0, &ov), ND_ACCESS_VIOLATION);
    char *hole = mmap(NULL, (size_t)page * 3, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(hole != MAP_FAILED && munmap(hole + page, (size_t)page) == 0);
    CHECK_ST(nd_mr_register(mr, hole, (size_t)page * 3, 0, &ov), ND_ACCESS_VIOLATION);   /* unmapped middle */
    CHECK_ST(nd_mr_register(mr, (void *)(uintptr_t)-64, 128, 0, &ov), ND_ACCESS_VIOLATION);   /* wraps */
    CHECK_ST(nd_mr_deregister(mr, &ov), ND_INVALID_DEVICE_STATE);

    /* Register: synchronous success, nothing queued, tokens valid. */
    CHECK_ST(nd_mr_register(mr, buf, sizeof(buf), ND_MR_FLAG_ALLOW_REMOTE_WRITE, &ov), ND_SUCCESS);
    nd_overlapped *got;
    CHECK_ST(nd_port_wait(port, 0, &got), ND_TIMEOUT);
    CHECK_ST(nd_mr_register(mr, buf, sizeof(buf), 0, &ov), ND_INVALID_DEVICE_STATE);
    uint32_t token = nd_mr_get_remote_token(mr);
    CHECK(token != 0 && nd_mr_get_local_token(mr) == token);

    /* Remote checks: ALLOW_REMOTE_WRITE (0x5) grants write and local write, not read. */
    CHECK_ST(check(a, token, buf, sizeof(buf), ND_ACCESS_REMOTE_WRITE), ND_SUCCESS);
    CHECK_ST(check(a, token, buf, sizeof(buf), ND_ACCESS_LOCAL_WRITE), ND_SUCCESS);
    CHECK_ST(check(a, token, buf, 1, ND_ACCESS_REMOTE_READ), ND_ACCESS_VIOLATION);
    CHECK_ST(check(a, token, buf + 100, 100, ND_ACCESS_REMOTE_WRITE), ND_SUCCESS);
    CHECK_ST(check(a, token, buf + sizeof(buf), 0, ND_ACCESS_REMOTE_WRITE), ND_SUCCESS);   /* empty, at the end */
    CHECK_ST(check(a, token, buf + 1, sizeof(buf), ND_ACCESS_REMOTE_WRITE), ND_ACCESS_VIOLATION);   /* over */
    CHECK_ST(nd_ntstatus(nd_mtab_check(a->mtab, ND_MTAB_ENTRIES, token, (uintptr_t)buf - 1, 2,
                                       ND_ACCESS_REMOTE_WRITE, 0)),
             ND_ACCESS_VIOLATION);   /* under */
    CHECK_ST(check(a, token, buf, UINT64_MAX, ND_ACCESS_REMOTE_WRITE), ND_ACCESS_VIOLATION);
    CHECK_ST(check(a, token ^ 0x1, buf, 1, ND_ACCESS_REMOTE_WRITE), ND_ACCESS_VIOLATION);   /* wrong key */
    CHECK_ST(check(a, 0, buf, 1, 0), ND_ACCESS_VIOLATION);
    CHECK_ST(check(a, 0xffffff00u, buf, 1, 0), ND_ACCESS_VIOLATION);   /* index out of the table */

    /* The same buffer in a second region with other rights gets another token. */
    CHECK_ST(nd_adapter_create_memory_region(a, port, &mr2), ND_SUCCESS);
    CHECK_ST(nd_mr_register(mr2, buf, 4096, ND_MR_FLAG_ALLOW_REMOTE_READ | ND_MR_FLAG_DO_NOT_SECURE_VM, &ov),
             ND_SUCCESS);
    uint32_t token2 = nd_mr_get_remote_token(mr2);
    CHECK(token2 != token);
    CHECK_ST(check(a, token2, buf, 4096, ND_ACCESS_REMOTE_READ), ND_SUCCESS);
    CHECK_ST(check(a, token2, buf, 4096, ND_ACCESS_REMOTE_WRITE), ND_ACCESS_VIOLATION);

    /* After deregistration the old token fails, also once its slot is reused. */
    CHECK_ST(nd_mr_deregister(mr, &ov), ND_SUCCESS);
    CHECK(nd_mr_get_remote_token(mr) == 0);
    CHECK_ST(check(a, token, buf, 1, ND_ACCESS_REMOTE_WRITE), ND_ACCESS_VIOLATION);
    CHECK_ST(nd_mr_register(mr, buf, sizeof(buf), ND_MR_FLAG_ALLOW_REMOTE_WRITE, &ov), ND_SUCCESS);
    CHECK(nd_mr_get_remote_token(mr) != token);
    CHECK_ST(check(a, token, buf, 1, ND_ACCESS_REMOTE_WRITE), ND_ACCESS_VIOLATION);
    CHECK_ST(nd_mr_cancel_overlapped_requests(mr), ND_SUCCESS);

    /* A thousand registrations get distinct tokens. */
    static nd_mr *many[1000];
    for (int i = 0; i < 1000; i++) {
        CHECK_ST(nd_adapter_create_memory_region(a, port, &many[i]), ND_SUCCESS);
        CHECK_ST(nd_mr_register(many[i], buf + i, 1, 0, &ov), ND_SUCCESS);
        for (int j = 0; j < i; j += 97)
            CHECK(nd_mr_get_local_token(many[j]) != nd_mr_get_local_token(many[i]));
    }
    for (int i = 0; i < 1000; i++)
        CHECK_ST(nd_mr_close(many[i]), ND_SUCCESS);   /* close deregisters */

    /* Memory windows: created invalid; the token does not grant access until bound. */
    CHECK_ST(nd_adapter_create_memory_window(a, NULL), ND_INVALID_PARAMETER_2);
    CHECK_ST(nd_adapter_create_memory_window(a, &mw), ND_SUCCESS);
    uint32_t wtoken = nd_mw_get_remote_token(mw);
    CHECK(wtoken != 0 && wtoken != nd_mr_get_remote_token(mr));
    CHECK_ST(check(a, wtoken, buf, 1, 0), ND_ACCESS_VIOLATION);
    CHECK_ST(nd_mw_close(mw), ND_SUCCESS);
    CHECK_ST(nd_mw_close(NULL), ND_INVALID_HANDLE);

    /* A window closed while bound (its QP gone) is invalidated: access ends, the region is free. */
    CHECK_ST(nd_adapter_create_memory_window(a, &mw), ND_SUCCESS);
    CHECK(nd_mw_bind_to(mw, mr, buf, 64, ND_ACCESS_REMOTE_READ, ND_KEY_NEXT, false) == 0);
    wtoken = nd_mw_get_remote_token(mw);
    CHECK_ST(check(a, wtoken, buf, 64, ND_ACCESS_REMOTE_READ), ND_SUCCESS);
    CHECK_ST(nd_mr_deregister(mr, &ov), ND_DEVICE_BUSY);
    CHECK_ST(nd_mw_close(mw), ND_SUCCESS);
    CHECK_ST(check(a, wtoken, buf, 64, ND_ACCESS_REMOTE_READ), ND_ACCESS_VIOLATION);

    /* Verbs' binds: the caller's key byte names the binding; a bound window rebinds only
     * when told to replace, and then the earlier token stops working. */
    CHECK_ST(nd_adapter_create_memory_window(a, &mw), ND_SUCCESS);
    CHECK(nd_mw_bind_to(mw, mr, buf, 64, ND_ACCESS_REMOTE_READ, ND_KEY_GIVEN | 0x42, false) == 0);
    wtoken = nd_mw_get_remote_token(mw);
    CHECK((wtoken & 0xff) == 0x42);
    CHECK_ST(check(a, wtoken, buf, 64, ND_ACCESS_REMOTE_READ), ND_SUCCESS);
    CHECK(nd_mw_bind_to(mw, mr, buf, 32, ND_ACCESS_REMOTE_READ, ND_KEY_GIVEN | 0x43, false) == -EBADRQC);
    CHECK(nd_mw_bind_to(mw, mr, buf + 64, 32, ND_ACCESS_REMOTE_READ, ND_KEY_GIVEN | 0x43, true) == 0);
    CHECK(nd_mw_get_remote_token(mw) == ((wtoken & ~0xffu) | 0x43));
    CHECK_ST(check(a, wtoken, buf, 64, ND_ACCESS_REMOTE_READ), ND_ACCESS_VIOLATION);
    CHECK_ST(check(a, nd_mw_get_remote_token(mw), buf + 64, 32, ND_ACCESS_REMOTE_READ), ND_SUCCESS);
    CHECK_ST(nd_mw_close(mw), ND_SUCCESS);

    CHECK_ST(nd_mr_close(mr), ND_SUCCESS);
    CHECK_ST(nd_mr_close(mr2), ND_SUCCESS);
    CHECK_ST(nd_port_close(port), ND_SUCCESS);
    CHECK_ST(nd_adapter_close(a), ND_SUCCESS);
    munmap(hole, (size_t)page);
    munmap(hole + 2 * page, (size_t)page);
    puts("memory regions ok");
    return 0;
}
