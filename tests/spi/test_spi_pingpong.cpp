// SPDX-License-Identifier: MIT
/*
 * The ND SPI from C++, as Windows ND programs use it: two processes (the server forked,
 * its port sent over a pipe), listener and connector on an IOCP-bound overlapped file,
 * Send/Receive ping-pong with CQ Notify and GetQueuedCompletionStatus, a memory window
 * bound for the peer's RDMA Write and Read, and Disconnect. Runs on ND_TRANSPORT's transport.
 */
#include "spi_test.h"

#include <initializer_list>

static const int kPings = 200;

struct Peer {
    IND2Adapter *adapter = nullptr;
    HANDLE file = nullptr, iocp = nullptr;
    IND2CompletionQueue *cq = nullptr;
    IND2MemoryRegion *mr = nullptr;
    IND2QueuePair *qp = nullptr;
    IND2Connector *conn = nullptr;
    OVERLAPPED ov = {};
    char *buf = nullptr;

    explicit Peer(const sockaddr_in &local)
    {
        CHECK_HR(NdOpenAdapter(IID_IND2Adapter, reinterpret_cast<const sockaddr *>(&local), sizeof(local),
                               reinterpret_cast<void **>(&adapter)), ND_SUCCESS);
        CHECK_HR(adapter->CreateOverlappedFile(&file), ND_SUCCESS);
        iocp = CreateIoCompletionPort(file, nullptr, 1, 0);
        CHECK(iocp != nullptr);
        CHECK_HR(adapter->CreateCompletionQueue(IID_IND2CompletionQueue, file, 64, 0, 0,
                                                reinterpret_cast<void **>(&cq)), ND_SUCCESS);
        CHECK_HR(adapter->CreateMemoryRegion(IID_IND2MemoryRegion, file, reinterpret_cast<void **>(&mr)),
                 ND_SUCCESS);
        buf = static_cast<char *>(HeapAlloc(GetProcessHeap(), HEAP_ZERO_MEMORY, 65536));
        CHECK(buf != nullptr);
        Wait(mr->Register(buf, 65536, ND_MR_FLAG_ALLOW_REMOTE_WRITE | ND_MR_FLAG_ALLOW_REMOTE_READ |
                          ND_MR_FLAG_RDMA_READ_SINK, &ov), ND_SUCCESS);
        CHECK_HR(adapter->CreateQueuePair(IID_IND2QueuePair, cq, cq, this, 16, 16, 2, 2, 64,
                                          reinterpret_cast<void **>(&qp)), ND_SUCCESS);
        CHECK_HR(adapter->CreateConnector(IID_IND2Connector, file, reinterpret_cast<void **>(&conn)), ND_SUCCESS);
    }

    ~Peer()
    {
        conn->Release();
        qp->Release();
        mr->Release();
        cq->Release();
        CloseHandle(iocp);
        CloseHandle(file);
        CHECK(adapter->Release() == 0);
        HeapFree(GetProcessHeap(), 0, buf);
    }

    /* A pending request's one packet arrives on the port; GetOverlappedResult agrees. */
    void Wait(HRESULT hr, HRESULT want)
    {
        DWORD bytes;
        ULONG_PTR key;
        OVERLAPPED *got;

        CHECK_HR(hr, ND_PENDING);
        BOOL ok = GetQueuedCompletionStatus(iocp, &bytes, &key, &got, 10000);
        CHECK(got == &ov && key == 1);
        CHECK(ok == (want >= 0));
        CHECK_HR(conn ? conn->GetOverlappedResult(&ov, FALSE) : mr->GetOverlappedResult(&ov, FALSE), want);
    }

    ND2_SGE Sge(ULONG off, ULONG len) { return ND2_SGE{ buf + off, len, mr->GetLocalToken() }; }

    /* One completion, waiting through Notify and the port when none is there yet; with
     * @skip_flushed, receives flushed by the peer's disconnect are passed over. */
    ND2_RESULT Next(bool skip_flushed = false)
    {
        ND2_RESULT r;
        while (cq->GetResults(&r, 1) == 0) {
            HRESULT hr = cq->Notify(ND_CQ_NOTIFY_ANY, &ov);
            CHECK(hr == ND_PENDING);
            DWORD bytes;
            ULONG_PTR key;
            OVERLAPPED *got;
            CHECK(GetQueuedCompletionStatus(iocp, &bytes, &key, &got, 10000) && got == &ov);
        }
        CHECK(r.QueuePairContext == this);
        if (skip_flushed && r.Status == ND_CANCELED && r.RequestType == Nd2RequestTypeReceive)
            return Next(true);
        CHECK_HR(r.Status, ND_SUCCESS);
        return r;
    }
};

/* Wait for one completion of each type in @types; a peer's message may arrive before our
 * own Send completes, so they come in either order. Each receive is reposted. */
static void Expect(Peer &p, std::initializer_list<ND2_REQUEST_TYPE> types, ND2_SGE *repost = nullptr)
{
    int want[8] = {};
    size_t left = types.size();

    for (ND2_REQUEST_TYPE t : types)
        want[t]++;
    while (left) {
        ND2_RESULT r = p.Next();
        CHECK(want[r.RequestType] > 0);
        want[r.RequestType]--;
        left--;
        if (r.RequestType == Nd2RequestTypeReceive && repost)
            CHECK_HR(p.qp->Receive(repost, repost, 1), ND_SUCCESS);
    }
}

struct WindowInfo {
    UINT64 address;
    UINT32 token;
};

static void server(const sockaddr_in &local, int ready)
{
    Peer p(local);
    IND2Listener *l;
    IND2MemoryWindow *mw;
    sockaddr_in bound;
    ULONG len = sizeof(bound);

    CHECK_HR(p.adapter->CreateListener(IID_IND2Listener, p.file, reinterpret_cast<void **>(&l)), ND_SUCCESS);
    CHECK_HR(l->Bind(reinterpret_cast<const sockaddr *>(&local), sizeof(local)), ND_SUCCESS);
    CHECK_HR(l->Listen(0), ND_SUCCESS);
    CHECK_HR(l->GetLocalAddress(reinterpret_cast<sockaddr *>(&bound), &len), ND_SUCCESS);
    CHECK(write(ready, &bound.sin_port, sizeof(bound.sin_port)) == sizeof(bound.sin_port));
    p.Wait(l->GetConnectionRequest(p.conn, &p.ov), ND_SUCCESS);
    char pdata[8];
    len = sizeof(pdata);
    CHECK_HR(p.conn->GetPrivateData(pdata, &len), ND_SUCCESS);
    CHECK(len >= 5 && memcmp(pdata, "hello", 5) == 0);

    ND2_SGE rs = p.Sge(0, 64);
    for (int i = 0; i < 4; i++)
        CHECK_HR(p.qp->Receive(&rs, &rs, 1), ND_SUCCESS);
    p.Wait(p.conn->Accept(p.qp, 4, 4, "ok", 2, &p.ov), ND_SUCCESS);

    /* Ping-pong: each received message goes back inline, with its byte count. */
    Expect(p, { Nd2RequestTypeReceive }, &rs);
    for (int i = 0; i < kPings; i++) {
        ND2_SGE s = p.Sge(0, 8);
        CHECK_HR(p.qp->Send(nullptr, &s, 1, ND_OP_FLAG_INLINE), ND_SUCCESS);
        if (i + 1 < kPings)
            Expect(p, { Nd2RequestTypeSend, Nd2RequestTypeReceive }, &rs);
        else
            Expect(p, { Nd2RequestTypeSend });
    }

    /* A window over the second 4 KiB for the client's Write and Read. */
    CHECK_HR(p.adapter->CreateMemoryWindow(IID_IND2MemoryWindow, reinterpret_cast<void **>(&mw)), ND_SUCCESS);
    memset(p.buf + 4096, 's', 4096);
    CHECK_HR(p.qp->Bind(&mw, p.mr, mw, p.buf + 4096, 4096, ND_OP_FLAG_ALLOW_READ | ND_OP_FLAG_ALLOW_WRITE),
             ND_SUCCESS);
    ND2_RESULT b = p.Next();
    CHECK(b.RequestType == Nd2RequestTypeBind && b.RequestContext == &mw);
    WindowInfo wi = { reinterpret_cast<UINT64>(p.buf + 4096), mw->GetRemoteToken() };
    memcpy(p.buf + 128, &wi, sizeof(wi));
    ND2_SGE s = p.Sge(128, sizeof(wi));
    CHECK_HR(p.qp->Send(nullptr, &s, 1, 0), ND_SUCCESS);
    /* The client's "done" Send comes after its Write and Read. */
    Expect(p, { Nd2RequestTypeSend, Nd2RequestTypeReceive });
    CHECK(memcmp(p.buf + 4096, "written by the client", 21) == 0);
    CHECK_HR(p.qp->Invalidate(nullptr, mw, 0), ND_SUCCESS);
    CHECK(p.Next().RequestType == Nd2RequestTypeInvalidate);
    mw->Release();
    p.Wait(p.conn->Disconnect(&p.ov), ND_SUCCESS);
    l->Release();
}

static void client(const sockaddr_in &dest, int)
{
    sockaddr_in local;
    SIZE_T len = sizeof(local);
    CHECK_HR(NdResolveAddress(reinterpret_cast<const sockaddr *>(&dest), sizeof(dest),
                              reinterpret_cast<sockaddr *>(&local), &len), ND_SUCCESS);
    Peer p(local);
    ND2_SGE rs = p.Sge(0, 64);
    for (int i = 0; i < 4; i++)
        CHECK_HR(p.qp->Receive(&rs, &rs, 1), ND_SUCCESS);
    CHECK_HR(p.conn->Bind(reinterpret_cast<const sockaddr *>(&local), sizeof(local)), ND_SUCCESS);
    p.Wait(p.conn->Connect(p.qp, reinterpret_cast<const sockaddr *>(&dest), sizeof(dest), 4, 4, "hello", 5, &p.ov),
           ND_SUCCESS);
    ULONG ird = 0, ord = 0;
    CHECK_HR(p.conn->GetReadLimits(&ird, &ord), ND_SUCCESS);
    CHECK(ird >= 1 && ord >= 1);
    p.Wait(p.conn->CompleteConnect(&p.ov), ND_SUCCESS);

    LARGE_INTEGER t0, t1, freq;
    QueryPerformanceFrequency(&freq);
    QueryPerformanceCounter(&t0);
    for (int i = 0; i < kPings; i++) {
        memcpy(p.buf + 256, &i, sizeof(i));
        ND2_SGE s = p.Sge(256, 8);
        CHECK_HR(p.qp->Send(nullptr, &s, 1, 0), ND_SUCCESS);
        Expect(p, { Nd2RequestTypeSend, Nd2RequestTypeReceive }, &rs);
        int echoed;
        memcpy(&echoed, p.buf, sizeof(echoed));
        /* The last reply may already be overwritten: the server's next message follows it
         * into the same buffer unasked. */
        if (i + 1 < kPings && echoed != i) {
            fprintf(stderr, "ping %d came back as %d\n", i, echoed);
            exit(1);
        }
    }
    QueryPerformanceCounter(&t1);

    ND2_RESULT r = p.Next();
    CHECK(r.RequestType == Nd2RequestTypeReceive && r.BytesTransferred == sizeof(WindowInfo));
    WindowInfo wi;
    memcpy(&wi, p.buf, sizeof(wi));
    memcpy(p.buf + 8192, "written by the client", 21);
    ND2_SGE ws = p.Sge(8192, 21);
    CHECK_HR(p.qp->Write(nullptr, &ws, 1, wi.address, wi.token, 0), ND_SUCCESS);
    CHECK(p.Next().RequestType == Nd2RequestTypeWrite);
    ND2_SGE read_sge = p.Sge(12288, 64);
    CHECK_HR(p.qp->Read(nullptr, &read_sge, 1, wi.address + 64, wi.token, 0), ND_SUCCESS);
    CHECK(p.Next().RequestType == Nd2RequestTypeRead);
    CHECK(p.buf[12288] == 's' && p.buf[12288 + 63] == 's');
    CHECK_HR(p.qp->Send(nullptr, nullptr, 0, 0), ND_SUCCESS);
    CHECK(p.Next(true).RequestType == Nd2RequestTypeSend);
    p.Wait(p.conn->NotifyDisconnect(&p.ov), ND_SUCCESS);
    wprintf(L"%s: %d ping-pongs, %.2f us per round trip\n", L"test_spi_pingpong", kPings,
            (t1.QuadPart - t0.QuadPart) * 1e6 / (double)freq.QuadPart / kPings);
}

int __cdecl _tmain(int argc, TCHAR *argv[])
{
    (void)argc;
    (void)argv;
    spi_run_pair(server, client);
    return 0;
}
