// SPDX-License-Identifier: MIT
/*
 * The ND SPI from C, through lpVtbl: the provider from DllGetClassObject, its address list,
 * an adapter and each object it creates, QueryInterface, reference counts, a completion
 * port with a posted packet and a Register packet, and the Windows printf rules.
 */
#include <ndspi/ndsupport.h>
#include <ndspi/tchar.h>

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define CHECK(c) do { if (!(c)) { fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, #c); exit(1); } } while (0)
#define CHECK_HR(e, want) do { HRESULT hr_ = (e); if (hr_ != (HRESULT)(want)) { \
    fprintf(stderr, "%s:%d: %s = %08x, want %08x\n", __FILE__, __LINE__, #e, (unsigned)hr_, (unsigned)(want)); exit(1); } } while (0)

static void check_format(void)
{
    char buf[256];
    FILE *f = fmemopen(buf, sizeof(buf), "w");

    CHECK(f);
    /* %s wide and %S narrow in a wide format; l is 32 bits, I64 64 bits, %% and %u plain. */
    ndw_fwprintf(f, L"[%s|%S|%lu|%I64d|%Iu|%5.1f|%c|%%]", L"wide", "narrow", 4000000000u,
                 (LONGLONG)-5000000000LL, (SIZE_T)7, 2.25, L'x');
    ndw_fprintf(f, "[%s|%S|%08x]", "n", L"w", 0xbeefu);
    fclose(f);
    CHECK(strcmp(buf, "[wide|narrow|4000000000|-5000000000|7|  2.2|x|%][n|w|0000beef]") == 0 ||
          strcmp(buf, "[wide|narrow|4000000000|-5000000000|7|  2.3|x|%][n|w|0000beef]") == 0);
}

static void check_address_parsing(void)
{
    struct sockaddr_in sin;
    INT len = sizeof(sin);

    CHECK(WSAStringToAddressW(L"127.0.0.1:54325", AF_INET, NULL, (LPSOCKADDR)&sin, &len) == 0);
    CHECK(sin.sin_port == htons(54325) && sin.sin_addr.s_addr == htonl(INADDR_LOOPBACK));
    CHECK(WSAStringToAddressW(L"127.0.0.1:99999", AF_INET, NULL, (LPSOCKADDR)&sin, &len) == SOCKET_ERROR);
    CHECK(WSAGetLastError() == WSAEINVAL);
}

int main(void)
{
    IClassFactory *factory;
    IND2Provider *provider;
    IND2Adapter *adapter, *again;
    IND2CompletionQueue *cq;
    IND2MemoryRegion *mr;
    IND2MemoryWindow *mw;
    IND2QueuePair *qp;
    IUnknown *unk;
    ULONG len = 0;
    UINT64 id;
    HANDLE file, iocp;
    OVERLAPPED ov = { 0 }, *got;
    DWORD bytes;
    ULONG_PTR key;
    static char buf[4096];
    struct sockaddr_in lo = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };

    check_format();
    check_address_parsing();
    CHECK_HR(NdStartup(), ND_SUCCESS);
    CHECK_HR(DllGetClassObject(&IID_IND2Provider, &IID_IClassFactory, (void **)&factory),
             CLASS_E_CLASSNOTAVAILABLE);
    CHECK_HR(DllGetClassObject(&CLSID_NetDirectProvider, &IID_IClassFactory, (void **)&factory), S_OK);
    CHECK_HR(factory->lpVtbl->CreateInstance(factory, NULL, &IID_IND2Provider, (void **)&provider), S_OK);
    factory->lpVtbl->Release(factory);

    CHECK_HR(provider->lpVtbl->QueryAddressList(provider, NULL, &len), ND_BUFFER_OVERFLOW);
    SOCKET_ADDRESS_LIST *list = malloc(len);
    CHECK(list);
    CHECK_HR(provider->lpVtbl->QueryAddressList(provider, list, &len), ND_SUCCESS);
    CHECK(list->iAddressCount >= 1);
    free(list);
    CHECK_HR(provider->lpVtbl->ResolveAddress(provider, (struct sockaddr *)&lo, sizeof(lo), &id), ND_SUCCESS);
    CHECK_HR(provider->lpVtbl->OpenAdapter(provider, &IID_IND2QueuePair, id, (void **)&adapter), E_NOINTERFACE);
    CHECK_HR(provider->lpVtbl->OpenAdapter(provider, &IID_IND2Adapter, id, (void **)&adapter), ND_SUCCESS);

    /* QueryInterface answers IUnknown and the adapter's own id with the same object. */
    CHECK_HR(adapter->lpVtbl->QueryInterface(adapter, &IID_IUnknown, (void **)&unk), S_OK);
    CHECK((void *)unk == (void *)adapter);
    CHECK_HR(adapter->lpVtbl->QueryInterface(adapter, &IID_IND2Adapter, (void **)&again), S_OK);
    CHECK_HR(adapter->lpVtbl->QueryInterface(adapter, &IID_IND2Listener, (void **)&unk), E_NOINTERFACE);
    CHECK(unk == NULL);
    CHECK(again->lpVtbl->Release(again) == 2);
    CHECK(adapter->lpVtbl->Release(adapter) == 1);

    ND2_ADAPTER_INFO info = { .InfoVersion = ND_VERSION_2 };
    len = sizeof(info);
    CHECK_HR(adapter->lpVtbl->Query(adapter, &info, &len), ND_SUCCESS);
    CHECK(info.MaxReceiveQueueDepth >= 1 && info.MaxInitiatorSge >= 1);

    CHECK_HR(adapter->lpVtbl->CreateOverlappedFile(adapter, &file), ND_SUCCESS);
    iocp = CreateIoCompletionPort(file, NULL, 42, 0);
    CHECK(iocp);
    CHECK(CreateIoCompletionPort(file, NULL, 43, 0) == NULL && GetLastError() == ERROR_NOT_SUPPORTED);
    CHECK_HR(adapter->lpVtbl->CreateCompletionQueue(adapter, &IID_IND2CompletionQueue, (HANDLE)buf, 64, 0, 0,
                                                    (void **)&cq), ND_INVALID_PARAMETER_2);
    CHECK_HR(adapter->lpVtbl->CreateCompletionQueue(adapter, &IID_IND2CompletionQueue, file, 64, 0, 0,
                                                    (void **)&cq), ND_SUCCESS);
    CHECK_HR(adapter->lpVtbl->CreateMemoryRegion(adapter, &IID_IND2MemoryRegion, file, (void **)&mr), ND_SUCCESS);
    CHECK_HR(adapter->lpVtbl->CreateMemoryWindow(adapter, &IID_IND2MemoryWindow, (void **)&mw), ND_SUCCESS);

    /* Register succeeds at once, is reported pending, and leaves one packet on the port. */
    CHECK_HR(mr->lpVtbl->Register(mr, buf, sizeof(buf), ND_MR_FLAG_ALLOW_LOCAL_WRITE, &ov), ND_PENDING);
    CHECK(GetQueuedCompletionStatus(iocp, &bytes, &key, &got, 1000));
    CHECK(got == &ov && key == 42);
    CHECK_HR(mr->lpVtbl->GetOverlappedResult(mr, &ov, TRUE), ND_SUCCESS);
    CHECK(!GetQueuedCompletionStatus(iocp, &bytes, &key, &got, 0) && got == NULL &&
          GetLastError() == WAIT_TIMEOUT);
    CHECK(mr->lpVtbl->GetLocalToken(mr) != 0);
    /* A failure returned at once queues nothing. */
    CHECK_HR(mr->lpVtbl->Register(mr, buf, sizeof(buf), ND_MR_FLAG_ALLOW_LOCAL_WRITE, &ov), ND_INVALID_DEVICE_STATE);
    CHECK(!GetQueuedCompletionStatus(iocp, &bytes, &key, &got, 0));

    /* A posted packet comes back with its own key and bytes. */
    CHECK(PostQueuedCompletionStatus(iocp, 7, 9, NULL));
    CHECK(GetQueuedCompletionStatus(iocp, &bytes, &key, &got, 1000) && got == NULL && bytes == 7 && key == 9);

    /* The QP checks its CQ arguments are CQs; SGE limits round up as on hardware. */
    CHECK_HR(adapter->lpVtbl->CreateQueuePair(adapter, &IID_IND2QueuePair, (IUnknown *)mr, (IUnknown *)cq, NULL,
                                              8, 8, 1, 1, 0, (void **)&qp), ND_INVALID_PARAMETER_2);
    CHECK_HR(adapter->lpVtbl->CreateQueuePair(adapter, &IID_IND2QueuePair, (IUnknown *)cq, (IUnknown *)cq, NULL,
                                              8, 8, 1, 1, 0, (void **)&qp), ND_SUCCESS);
    ND2_SGE sge[2] = { { buf, 8, mr->lpVtbl->GetLocalToken(mr) }, { buf + 8, 8, mr->lpVtbl->GetLocalToken(mr) } };
    CHECK_HR(qp->lpVtbl->Receive(qp, NULL, sge, 2), ND_SUCCESS);
    CHECK_HR(qp->lpVtbl->Send(qp, NULL, sge, 1, 0), ND_CONNECTION_INVALID);
    CHECK_HR(qp->lpVtbl->Flush(qp), ND_SUCCESS);
    ND2_RESULT r;
    CHECK(cq->lpVtbl->GetResults(cq, &r, 1) == 1 && r.Status == ND_CANCELED && r.RequestType == Nd2RequestTypeReceive);

    /* Release in any order: the region goes once the window and QP are gone. */
    CHECK(mr->lpVtbl->Release(mr) == 0);
    CHECK(cq->lpVtbl->Release(cq) == 0);
    CHECK(qp->lpVtbl->Release(qp) == 0);
    CHECK(mw->lpVtbl->Release(mw) == 0);
    CHECK(CloseHandle(iocp));
    CHECK(CloseHandle(file));
    CHECK(!CloseHandle(NULL) && GetLastError() == ERROR_INVALID_HANDLE);
    CHECK(adapter->lpVtbl->Release(adapter) == 0);
    CHECK_HR(NdCleanup(), ND_SUCCESS);
    puts("SPI through lpVtbl: provider, adapter, CQ, MR, MW, QP, completion port");
    return 0;
}
