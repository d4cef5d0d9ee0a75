// SPDX-License-Identifier: MIT
/*
 * The ND SPI interfaces test_spi_pingpong leaves out, from C++, two processes (the server
 * forked, synchronised on a pipe) on ND_TRANSPORT's transport:
 *  - IND2SharedReceiveQueue: GetNotifyAffinity, Receive, Modify (refused below the posted
 *    count), Notify (refused without a threshold, pending, then fired by consumption), and
 *    a queue pair made on it with CreateQueuePairWithSrq;
 *  - IND2Connector: Reject with private data (the initiator's Connect fails
 *    ND_CONNECTION_REFUSED and GetPrivateData reads it), GetLocalAddress, GetPeerAddress;
 *  - IND2CompletionQueue: Resize, GetNotifyAffinity, CancelOverlappedRequests;
 *  - IND2QueuePair::Flush, IND2MemoryRegion::Deregister.
 */
#include "spi_test.h"



static const int kMessages = 3;

struct Side {
    IND2Adapter *adapter = nullptr;
    HANDLE file = nullptr, iocp = nullptr;
    IND2CompletionQueue *cq = nullptr;
    IND2MemoryRegion *mr = nullptr;
    OVERLAPPED ov = {}, srq_ov = {};
    bool srq_fired = false;
    char *buf = nullptr;

    explicit Side(const sockaddr_in &local)
    {
        CHECK_HR(NdOpenAdapter(IID_IND2Adapter, reinterpret_cast<const sockaddr *>(&local), sizeof(local),
                               reinterpret_cast<void **>(&adapter)), ND_SUCCESS);
        CHECK_HR(adapter->CreateOverlappedFile(&file), ND_SUCCESS);
        iocp = CreateIoCompletionPort(file, nullptr, 7, 0);
        CHECK(iocp != nullptr);
        CHECK_HR(adapter->CreateCompletionQueue(IID_IND2CompletionQueue, file, 32, 0, 0,
                                                reinterpret_cast<void **>(&cq)), ND_SUCCESS);
        CHECK_HR(adapter->CreateMemoryRegion(IID_IND2MemoryRegion, file, reinterpret_cast<void **>(&mr)),
                 ND_SUCCESS);
        buf = static_cast<char *>(HeapAlloc(GetProcessHeap(), HEAP_ZERO_MEMORY, 65536));
        CHECK(buf != nullptr);
        Wait(mr, mr->Register(buf, 65536, ND_MR_FLAG_ALLOW_LOCAL_WRITE, &ov), ND_SUCCESS);
    }

    ~Side()
    {
        Wait(mr, mr->Deregister(&ov), ND_SUCCESS);
        CHECK(mr->Release() == 0);
        CHECK(cq->Release() == 0);
        CloseHandle(iocp);
        CloseHandle(file);
        CHECK(adapter->Release() == 0);
        HeapFree(GetProcessHeap(), 0, buf);
    }

    /* The next port packet for @want; the SRQ's notify packet is noted on the way. */
    bool Packet(OVERLAPPED *want)
    {
        for (;;) {
            DWORD bytes;
            ULONG_PTR key;
            OVERLAPPED *got = nullptr;
            BOOL ok = GetQueuedCompletionStatus(iocp, &bytes, &key, &got, 10000);

            CHECK(got != nullptr && key == 7);
            if (got == want)
                return ok;
            CHECK(got == &srq_ov);
            srq_fired = true;
        }
    }

    /* A request that went pending: its one packet arrives, its result is @want. */
    template <class T> void Wait(T *obj, HRESULT hr, HRESULT want, OVERLAPPED *o = nullptr)
    {
        o = o ? o : &ov;
        CHECK_HR(hr, ND_PENDING);
        CHECK(Packet(o) == (want >= 0));
        CHECK_HR(obj->GetOverlappedResult(o, FALSE), want);
    }

    ND2_SGE Sge(ULONG off, ULONG len) { return ND2_SGE{ buf + off, len, mr->GetLocalToken() }; }

    ND2_RESULT Next()
    {
        ND2_RESULT r;

        while (cq->GetResults(&r, 1) == 0) {
            CHECK_HR(cq->Notify(ND_CQ_NOTIFY_ANY, &ov), ND_PENDING);
            Packet(&ov);
        }
        CHECK_HR(r.Status, ND_SUCCESS);
        return r;
    }
};

static void server(const sockaddr_in &local, int pipe_wr)
{
    Side p(local);
    IND2SharedReceiveQueue *srq;
    IND2QueuePair *qp;
    IND2Listener *l;
    IND2Connector *c;
    USHORT group;
    KAFFINITY affinity;

    CHECK_HR(p.adapter->CreateSharedReceiveQueue(IID_IND2SharedReceiveQueue, p.file, 8, 1, 0, 0, 0,
                                                 reinterpret_cast<void **>(&srq)), ND_SUCCESS);
    CHECK_HR(srq->GetNotifyAffinity(&group, &affinity), ND_SUCCESS);
    CHECK_HR(srq->Notify(&p.srq_ov), ND_INVALID_DEVICE_STATE);      /* no threshold yet */
    for (uintptr_t i = 0; i < 4; i++) {
        ND2_SGE s = p.Sge(ULONG(64 * i), 64);
        CHECK_HR(srq->Receive(reinterpret_cast<void *>(i + 1), &s, 1), ND_SUCCESS);
    }
    CHECK_HR(srq->Modify(2, 0), ND_BUFFER_OVERFLOW);                 /* below the 4 posted */
    CHECK_HR(srq->Modify(16, 2), ND_SUCCESS);
    CHECK_HR(srq->Notify(&p.srq_ov), ND_PENDING);                    /* fires below 2 posted */
    CHECK_HR(p.adapter->CreateQueuePairWithSrq(IID_IND2QueuePair, p.cq, p.cq, srq, &p, 8, 1, 0,
                                               reinterpret_cast<void **>(&qp)), ND_SUCCESS);

    CHECK_HR(p.adapter->CreateListener(IID_IND2Listener, p.file, reinterpret_cast<void **>(&l)), ND_SUCCESS);
    CHECK_HR(l->Bind(reinterpret_cast<const sockaddr *>(&local), sizeof(local)), ND_SUCCESS);
    CHECK_HR(l->Listen(0), ND_SUCCESS);
    sockaddr_in bound;
    ULONG len = sizeof(bound);
    CHECK_HR(l->GetLocalAddress(reinterpret_cast<sockaddr *>(&bound), &len), ND_SUCCESS);
    CHECK(write(pipe_wr, &bound.sin_port, sizeof(bound.sin_port)) == sizeof(bound.sin_port));

    /* The first request is refused, with private data for the initiator. */
    char pdata[16];
    CHECK_HR(p.adapter->CreateConnector(IID_IND2Connector, p.file, reinterpret_cast<void **>(&c)), ND_SUCCESS);
    p.Wait(l, l->GetConnectionRequest(c, &p.ov), ND_SUCCESS);
    len = sizeof(pdata);
    CHECK_HR(c->GetPrivateData(pdata, &len), ND_SUCCESS);
    CHECK(len >= 5 && memcmp(pdata, "first", 5) == 0);
    CHECK_HR(c->Reject("no", 2), ND_SUCCESS);
    CHECK(c->Release() == 0);

    /* The second is accepted onto the SRQ's queue pair. */
    CHECK_HR(p.adapter->CreateConnector(IID_IND2Connector, p.file, reinterpret_cast<void **>(&c)), ND_SUCCESS);
    p.Wait(l, l->GetConnectionRequest(c, &p.ov), ND_SUCCESS);
    p.Wait(c, c->Accept(qp, 0, 0, nullptr, 0, &p.ov), ND_SUCCESS);
    sockaddr_in mine, peer;
    len = sizeof(mine);
    CHECK_HR(c->GetLocalAddress(reinterpret_cast<sockaddr *>(&mine), &len), ND_SUCCESS);
    CHECK(mine.sin_port == bound.sin_port && mine.sin_addr.s_addr == local.sin_addr.s_addr);
    len = sizeof(peer);
    CHECK_HR(c->GetPeerAddress(reinterpret_cast<sockaddr *>(&peer), &len), ND_SUCCESS);
    CHECK(peer.sin_family == AF_INET && peer.sin_port != 0);
    CHECK(write(pipe_wr, &peer.sin_port, sizeof(peer.sin_port)) == sizeof(peer.sin_port));

    /* The client's messages take the SRQ's receives, in the order they were posted. */
    for (uintptr_t i = 0; i < kMessages; i++) {
        ND2_RESULT r = p.Next();
        CHECK(r.RequestType == Nd2RequestTypeReceive && r.QueuePairContext == &p);
        CHECK(r.RequestContext == reinterpret_cast<void *>(i + 1) && r.BytesTransferred == 8);
        CHECK(p.buf[64 * i] == char('a' + i));
    }
    /* One receive is left: below the threshold, so the notify has fired (or fires now). */
    if (!p.srq_fired)
        CHECK(p.Packet(&p.srq_ov));
    CHECK_HR(srq->GetOverlappedResult(&p.srq_ov, FALSE), ND_SUCCESS);

    /* CQ: resize, affinity, and a notify cancelled by CancelOverlappedRequests. */
    CHECK_HR(p.cq->Resize(64), ND_SUCCESS);
    CHECK_HR(p.cq->GetNotifyAffinity(&group, &affinity), ND_SUCCESS);
    HRESULT hr = p.cq->Notify(ND_CQ_NOTIFY_ANY, &p.ov);
    CHECK_HR(p.cq->CancelOverlappedRequests(), ND_SUCCESS);
    p.Wait(p.cq, hr, ND_CANCELED);

    p.Wait(c, c->Disconnect(&p.ov), ND_SUCCESS);
    CHECK_HR(qp->Flush(), ND_SUCCESS);
    CHECK(c->Release() == 0);
    CHECK(qp->Release() == 0);
    CHECK(l->Release() == 0);
    CHECK(srq->Release() == 0);
}

/* A new QP and connector, bound to @local, Connect to @dest with @pdata as private data;
 * the Connect must end with @want. */
static void dial(Side &p, const sockaddr_in &local, const sockaddr_in &dest, const char *pdata, HRESULT want,
                 IND2QueuePair **qp, IND2Connector **c)
{
    CHECK_HR(p.adapter->CreateQueuePair(IID_IND2QueuePair, p.cq, p.cq, &p, 4, 4, 1, 1, 0,
                                        reinterpret_cast<void **>(qp)), ND_SUCCESS);
    CHECK_HR(p.adapter->CreateConnector(IID_IND2Connector, p.file, reinterpret_cast<void **>(c)), ND_SUCCESS);
    CHECK_HR((*c)->Bind(reinterpret_cast<const sockaddr *>(&local), sizeof(local)), ND_SUCCESS);
    p.Wait(*c, (*c)->Connect(*qp, reinterpret_cast<const sockaddr *>(&dest), sizeof(dest), 0, 0, pdata,
                             static_cast<ULONG>(strlen(pdata)), &p.ov), want);
}

static void client(const sockaddr_in &dest, int pipe_rd)
{
    sockaddr_in local;
    SIZE_T slen = sizeof(local);
    CHECK_HR(NdResolveAddress(reinterpret_cast<const sockaddr *>(&dest), sizeof(dest),
                              reinterpret_cast<sockaddr *>(&local), &slen), ND_SUCCESS);
    Side p(local);
    IND2QueuePair *qp;
    IND2Connector *c;
    char pdata[16];
    ULONG len;

    /* Refused: the Connect completes ND_CONNECTION_REFUSED, the reject's data readable. */
    dial(p, local, dest, "first", ND_CONNECTION_REFUSED, &qp, &c);
    len = sizeof(pdata);
    CHECK_HR(c->GetPrivateData(pdata, &len), ND_SUCCESS);
    CHECK(len >= 2 && memcmp(pdata, "no", 2) == 0);
    CHECK(c->Release() == 0);
    CHECK(qp->Release() == 0);

    dial(p, local, dest, "second", ND_SUCCESS, &qp, &c);
    p.Wait(c, c->CompleteConnect(&p.ov), ND_SUCCESS);
    sockaddr_in mine, peer;
    len = sizeof(mine);
    CHECK_HR(c->GetLocalAddress(reinterpret_cast<sockaddr *>(&mine), &len), ND_SUCCESS);
    USHORT seen;
    CHECK(read(pipe_rd, &seen, sizeof(seen)) == sizeof(seen));
    CHECK(seen == mine.sin_port);                   /* the server's GetPeerAddress */
    len = sizeof(peer);
    CHECK_HR(c->GetPeerAddress(reinterpret_cast<sockaddr *>(&peer), &len), ND_SUCCESS);
    CHECK(peer.sin_port == dest.sin_port && peer.sin_addr.s_addr == dest.sin_addr.s_addr);

    for (int i = 0; i < kMessages; i++) {
        memset(p.buf + 1024, 'a' + i, 8);
        ND2_SGE s = p.Sge(1024, 8);
        CHECK_HR(qp->Send(nullptr, &s, 1, 0), ND_SUCCESS);
        CHECK(p.Next().RequestType == Nd2RequestTypeSend);
    }
    p.Wait(c, c->NotifyDisconnect(&p.ov), ND_SUCCESS);
    p.Wait(c, c->Disconnect(&p.ov), ND_SUCCESS);
    CHECK(c->Release() == 0);
    CHECK(qp->Release() == 0);
}

int __cdecl _tmain(int argc, TCHAR *argv[])
{
    (void)argc;
    (void)argv;
    spi_run_pair(server, client);
    wprintf(L"%s: SRQ, reject, addresses, CQ resize and cancel ok\n", L"test_spi_srq_cm");
    return 0;
}
