// SPDX-License-Identifier: MIT
/* The Win32 subset of win32.h: handles, events, threads, heap, time, errors, Winsock. */
#include "spi_int.h"

#include <errno.h>
#include <netdb.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>

static __thread DWORD last_error;

SPI_API DWORD GetLastError(void) { return last_error; }
SPI_API void SetLastError(DWORD error) { last_error = error; }
void ndw_set_last_error(DWORD error) { last_error = error; }

/* WSAGetLastError shares the thread's last error, as on Windows. */
SPI_API int WSAGetLastError(void) { return (int)last_error; }

struct ndw_handle *ndw_handle_get(HANDLE h, enum ndw_handle_type type)
{
    struct ndw_handle *hd = (struct ndw_handle *)((uintptr_t)h & ~(uintptr_t)1);

    if (!hd || h == INVALID_HANDLE_VALUE || ((uintptr_t)hd & (sizeof(void *) - 1)))
        return NULL;
    return hd->type == (uint32_t)type ? hd : NULL;
}

static struct ndw_handle *any_handle(HANDLE h)
{
    static const enum ndw_handle_type types[] = { NDW_HANDLE_EVENT, NDW_HANDLE_THREAD,
                                                  NDW_HANDLE_IOCP, NDW_HANDLE_FILE };
    for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
        struct ndw_handle *hd = ndw_handle_get(h, types[i]);
        if (hd)
            return hd;
    }
    return NULL;
}

SPI_API BOOL CloseHandle(HANDLE h)
{
    struct ndw_handle *hd = any_handle(h);

    if (!hd) {
        last_error = ERROR_INVALID_HANDLE;
        return FALSE;
    }
    hd->close(hd);
    return TRUE;
}

/* --- Events and threads: a mutex, a condition and a signalled flag --------------------- */

struct ndw_waitable {
    struct ndw_handle h;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool signalled;
    bool manual_reset;
    uint32_t refs;        /* the handle, and for a thread the thread itself */
    pthread_t thread;
    LPTHREAD_START_ROUTINE start;
    void *parameter;
};

static void waitable_unref(struct ndw_waitable *w)
{
    if (__atomic_sub_fetch(&w->refs, 1, __ATOMIC_ACQ_REL))
        return;
    pthread_cond_destroy(&w->cond);
    pthread_mutex_destroy(&w->lock);
    w->h.type = 0;
    free(w);
}

static void waitable_close(struct ndw_handle *h)
{
    waitable_unref(SPI_CONTAINER_OF(h, struct ndw_waitable, h));
}

static struct ndw_waitable *waitable_new(enum ndw_handle_type type, bool manual, bool state)
{
    struct ndw_waitable *w = calloc(1, sizeof(*w));
    pthread_condattr_t attr;

    if (!w) {
        last_error = ERROR_NOT_ENOUGH_MEMORY;
        return NULL;
    }
    w->h.type = type;
    w->h.close = waitable_close;
    w->manual_reset = manual;
    w->signalled = state;
    w->refs = 1;
    pthread_mutex_init(&w->lock, NULL);
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&w->cond, &attr);
    pthread_condattr_destroy(&attr);
    return w;
}

SPI_API HANDLE CreateEventW(LPSECURITY_ATTRIBUTES attributes, BOOL manual_reset, BOOL initial_state,
                            LPCWSTR name)
{
    (void)attributes;
    if (name) {
        last_error = ERROR_NOT_SUPPORTED;   /* named events need a namespace we do not keep */
        return NULL;
    }
    return waitable_new(NDW_HANDLE_EVENT, manual_reset, initial_state);
}

SPI_API HANDLE CreateEventA(LPSECURITY_ATTRIBUTES attributes, BOOL manual_reset, BOOL initial_state,
                            LPCSTR name)
{
    (void)attributes;
    if (name) {
        last_error = ERROR_NOT_SUPPORTED;
        return NULL;
    }
    return waitable_new(NDW_HANDLE_EVENT, manual_reset, initial_state);
}

static BOOL event_set(HANDLE h, bool state)
{
    struct ndw_handle *hd = ndw_handle_get(h, NDW_HANDLE_EVENT);
    struct ndw_waitable *w;

    if (!hd) {
        last_error = ERROR_INVALID_HANDLE;
        return FALSE;
    }
    w = SPI_CONTAINER_OF(hd, struct ndw_waitable, h);
    pthread_mutex_lock(&w->lock);
    w->signalled = state;
    if (state)
        pthread_cond_broadcast(&w->cond);
    pthread_mutex_unlock(&w->lock);
    return TRUE;
}

SPI_API BOOL SetEvent(HANDLE h) { return event_set(h, true); }
SPI_API BOOL ResetEvent(HANDLE h) { return event_set(h, false); }

void ndw_event_signal(HANDLE h)
{
    if (ndw_handle_get(h, NDW_HANDLE_EVENT))
        event_set(h, true);
}

SPI_API DWORD WaitForSingleObject(HANDLE h, DWORD timeout_ms)
{
    struct ndw_handle *hd = ndw_handle_get(h, NDW_HANDLE_EVENT);
    struct ndw_waitable *w;
    struct timespec deadline;
    DWORD rc = WAIT_OBJECT_0;

    if (!hd)
        hd = ndw_handle_get(h, NDW_HANDLE_THREAD);
    if (!hd) {
        last_error = ERROR_INVALID_HANDLE;
        return WAIT_FAILED;
    }
    w = SPI_CONTAINER_OF(hd, struct ndw_waitable, h);
    clock_gettime(CLOCK_MONOTONIC, &deadline);
    deadline.tv_sec += timeout_ms / 1000;
    deadline.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
    if (deadline.tv_nsec >= 1000000000L) {
        deadline.tv_sec++;
        deadline.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&w->lock);
    while (!w->signalled && rc == WAIT_OBJECT_0) {
        if (timeout_ms == INFINITE)
            pthread_cond_wait(&w->cond, &w->lock);
        else if (pthread_cond_timedwait(&w->cond, &w->lock, &deadline) == ETIMEDOUT)
            rc = w->signalled ? WAIT_OBJECT_0 : WAIT_TIMEOUT;
    }
    if (rc == WAIT_OBJECT_0 && hd->type == NDW_HANDLE_EVENT && !w->manual_reset)
        w->signalled = false;
    pthread_mutex_unlock(&w->lock);
    return rc;
}

static void *thread_main(void *arg)
{
    struct ndw_waitable *w = arg;

    w->start(w->parameter);
    pthread_mutex_lock(&w->lock);
    w->signalled = true;   /* a thread handle is signalled once the thread has ended */
    pthread_cond_broadcast(&w->cond);
    pthread_mutex_unlock(&w->lock);
    waitable_unref(w);
    return NULL;
}

SPI_API HANDLE CreateThread(LPSECURITY_ATTRIBUTES attributes, SIZE_T stack_size,
                            LPTHREAD_START_ROUTINE start, LPVOID parameter, DWORD creation_flags,
                            LPDWORD thread_id)
{
    struct ndw_waitable *w;
    pthread_attr_t attr;
    int rc;

    (void)attributes;
    if (!start || creation_flags) {   /* CREATE_SUSPENDED and the like are not provided */
        last_error = ERROR_INVALID_PARAMETER;
        return NULL;
    }
    w = waitable_new(NDW_HANDLE_THREAD, true, false);
    if (!w)
        return NULL;
    w->start = start;
    w->parameter = parameter;
    w->refs = 2;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    if (stack_size)
        pthread_attr_setstacksize(&attr, stack_size < 65536 ? 65536 : stack_size);
    rc = pthread_create(&w->thread, &attr, thread_main, w);
    pthread_attr_destroy(&attr);
    if (rc) {
        w->refs = 1;
        waitable_unref(w);
        last_error = ERROR_NOT_ENOUGH_MEMORY;
        return NULL;
    }
    if (thread_id)
        *thread_id = (DWORD)(uintptr_t)w;
    return w;
}

SPI_API DWORD GetCurrentThreadId(void) { return (DWORD)syscall(SYS_gettid); }
SPI_API DWORD GetCurrentProcessId(void) { return (DWORD)getpid(); }

SPI_API void Sleep(DWORD ms)
{
    struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L };

    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

/* --- Heap and time ------------------------------------------------------------------------ */

SPI_API HANDLE GetProcessHeap(void)
{
    static int process_heap;   /* any stable non-NULL value */
    return &process_heap;
}

SPI_API LPVOID HeapAlloc(HANDLE heap, DWORD flags, SIZE_T bytes)
{
    (void)heap;
    return (flags & HEAP_ZERO_MEMORY) ? calloc(1, bytes ? bytes : 1) : malloc(bytes ? bytes : 1);
}

SPI_API BOOL HeapFree(HANDLE heap, DWORD flags, LPVOID mem)
{
    (void)heap;
    (void)flags;
    free(mem);
    return TRUE;
}

SPI_API BOOL QueryPerformanceCounter(LARGE_INTEGER *count)
{
    struct timespec ts;

    if (!count)
        return FALSE;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    count->QuadPart = (LONGLONG)ts.tv_sec * 1000000000LL + ts.tv_nsec;
    return TRUE;
}

SPI_API BOOL QueryPerformanceFrequency(LARGE_INTEGER *frequency)
{
    if (!frequency)
        return FALSE;
    frequency->QuadPart = 1000000000LL;
    return TRUE;
}

SPI_API ULONGLONG GetTickCount64(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (ULONGLONG)ts.tv_sec * 1000u + (ULONGLONG)ts.tv_nsec / 1000000u;
}

SPI_API DWORD GetTickCount(void) { return (DWORD)GetTickCount64(); }

static void to_filetime(FILETIME *ft, uint64_t hundred_ns)
{
    if (ft) {
        ft->dwLowDateTime = (DWORD)hundred_ns;
        ft->dwHighDateTime = (DWORD)(hundred_ns >> 32);
    }
}

/* GetSystemTimes: summed over all processors, as on Windows; kernel time includes idle. */
SPI_API BOOL GetSystemTimes(FILETIME *idle, FILETIME *kernel, FILETIME *user)
{
    unsigned long long v[10] = { 0 };
    long hz = sysconf(_SC_CLK_TCK);
    FILE *f = fopen("/proc/stat", "re");
    uint64_t scale;
    int n;

    if (!f) {
        last_error = ERROR_NOT_SUPPORTED;
        return FALSE;
    }
    n = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3],
               &v[4], &v[5], &v[6], &v[7]);
    fclose(f);
    if (n < 4 || hz <= 0) {
        last_error = ERROR_NOT_SUPPORTED;
        return FALSE;
    }
    scale = 10000000ull / (uint64_t)hz;
    /* user+nice; system+irq+softirq+steal plus idle+iowait. */
    to_filetime(idle, (v[3] + v[4]) * scale);
    to_filetime(kernel, (v[2] + v[5] + v[6] + v[7] + v[3] + v[4]) * scale);
    to_filetime(user, (v[0] + v[1]) * scale);
    return TRUE;
}

SPI_API void GetSystemInfo(LPSYSTEM_INFO info)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    long page = sysconf(_SC_PAGESIZE);

    if (!info)
        return;
    memset(info, 0, sizeof(*info));
    info->wProcessorArchitecture = 9;   /* PROCESSOR_ARCHITECTURE_AMD64 */
    info->dwPageSize = (DWORD)page;
    info->dwNumberOfProcessors = n > 0 ? (DWORD)n : 1;
    info->dwActiveProcessorMask = n >= 64 ? ~(DWORD_PTR)0 : (((DWORD_PTR)1 << info->dwNumberOfProcessors) - 1);
    info->dwAllocationGranularity = 65536;
    info->lpMinimumApplicationAddress = (LPVOID)(uintptr_t)page;
    info->lpMaximumApplicationAddress = (LPVOID)(uintptr_t)0x7ffffffeffffull;
}

/* --- Errors ---------------------------------------------------------------------------- */

/* The Win32 error GetQueuedCompletionStatus reports for a failed ND request. */
DWORD ndw_error_from_status(nd_status st)
{
    switch (st) {
    case ND_CANCELED: return ERROR_OPERATION_ABORTED;
    case ND_IO_TIMEOUT: return 121;                    /* ERROR_SEM_TIMEOUT */
    case ND_CONNECTION_REFUSED: return 1225;           /* ERROR_CONNECTION_REFUSED */
    case ND_CONNECTION_ABORTED: return 1236;           /* ERROR_CONNECTION_ABORTED */
    case STATUS_CONNECTION_DISCONNECTED: return 64;    /* ERROR_NETNAME_DELETED */
    case ND_NETWORK_UNREACHABLE: return 1231;          /* ERROR_NETWORK_UNREACHABLE */
    case ND_HOST_UNREACHABLE: return 1232;             /* ERROR_HOST_UNREACHABLE */
    case ND_INVALID_PARAMETER: return ERROR_INVALID_PARAMETER;
    case ND_NO_MEMORY: return ERROR_NOT_ENOUGH_MEMORY;
    case ND_INSUFFICIENT_RESOURCES: return 1450;       /* ERROR_NO_SYSTEM_RESOURCES */
    case ND_BUFFER_OVERFLOW: return 234;               /* ERROR_MORE_DATA */
    default: return 31;                                /* ERROR_GEN_FAILURE */
    }
}

/* --- Winsock ------------------------------------------------------------------------------ */

SPI_API int WSAStartup(WORD version, LPWSADATA data)
{
    if (!data)
        return WSAEFAULT;
    memset(data, 0, sizeof(*data));
    data->wVersion = version;
    data->wHighVersion = MAKEWORD(2, 2);
    strcpy(data->szDescription, "netdirect Winsock subset");
    strcpy(data->szSystemStatus, "Running");
    return LOBYTE(version) < 1 ? WSAVERNOTSUPPORTED : 0;
}

SPI_API int WSACleanup(void) { return 0; }

static int parse_port(const char *s, unsigned short *port)
{
    char *end;
    unsigned long v;

    if (!*s)
        return -1;
    errno = 0;
    v = strtoul(s, &end, 10);
    if (*end || errno || v > 65535)
        return -1;
    *port = htons((unsigned short)v);
    return 0;
}

static int parse_v4(const char *s, struct sockaddr_in *sin)
{
    char host[64];
    const char *colon = strchr(s, ':');
    size_t n = colon ? (size_t)(colon - s) : strlen(s);

    if (n >= sizeof(host))
        return -1;
    memcpy(host, s, n);
    host[n] = 0;
    memset(sin, 0, sizeof(*sin));
    sin->sin_family = AF_INET;
    if (inet_pton(AF_INET, host, &sin->sin_addr) != 1)
        return -1;
    return colon ? parse_port(colon + 1, &sin->sin_port) : 0;
}

static int parse_v6(const char *s, struct sockaddr_in6 *sin6)
{
    char host[INET6_ADDRSTRLEN + 16];
    const char *port = NULL;
    size_t n = strlen(s);
    char *pct;

    memset(sin6, 0, sizeof(*sin6));
    sin6->sin6_family = AF_INET6;
    if (*s == '[') {
        const char *close = strchr(s, ']');
        if (!close)
            return -1;
        n = (size_t)(close - s - 1);
        s++;
        if (close[1] == ':')
            port = close + 2;
        else if (close[1])
            return -1;
    }
    if (n >= sizeof(host))
        return -1;
    memcpy(host, s, n);
    host[n] = 0;
    pct = strchr(host, '%');
    if (pct) {
        *pct = 0;
        sin6->sin6_scope_id = (uint32_t)strtoul(pct + 1, NULL, 10);
    }
    if (inet_pton(AF_INET6, host, &sin6->sin6_addr) != 1)
        return -1;
    return port ? parse_port(port, &sin6->sin6_port) : 0;
}

SPI_API INT WSAStringToAddressA(LPSTR address, INT family, LPWSAPROTOCOL_INFOA protocol,
                                LPSOCKADDR out, LPINT length)
{
    union { struct sockaddr_in v4; struct sockaddr_in6 v6; } a;
    int need = family == AF_INET ? (int)sizeof(a.v4) : (int)sizeof(a.v6);
    int bad;

    if (!address || !length || protocol || (family != AF_INET && family != AF_INET6)) {
        last_error = WSAEINVAL;
        return SOCKET_ERROR;
    }
    bad = family == AF_INET ? parse_v4(address, &a.v4) : parse_v6(address, &a.v6);
    if (bad) {
        last_error = WSAEINVAL;
        return SOCKET_ERROR;
    }
    if (!out || *length < need) {
        *length = need;
        last_error = WSAEFAULT;
        return SOCKET_ERROR;
    }
    memcpy(out, &a, (size_t)need);
    *length = need;
    return 0;
}

SPI_API INT WSAStringToAddressW(LPWSTR address, INT family, LPWSAPROTOCOL_INFOW protocol,
                                LPSOCKADDR out, LPINT length)
{
    char narrow[128];
    size_t i;

    if (!address) {
        last_error = WSAEINVAL;
        return SOCKET_ERROR;
    }
    /* Addresses are ASCII; anything else cannot parse. */
    for (i = 0; address[i] && i + 1 < sizeof(narrow); i++) {
        if (address[i] > 0x7e) {
            last_error = WSAEINVAL;
            return SOCKET_ERROR;
        }
        narrow[i] = (char)address[i];
    }
    if (address[i]) {
        last_error = WSAEINVAL;
        return SOCKET_ERROR;
    }
    narrow[i] = 0;
    return WSAStringToAddressA(narrow, family, (LPWSAPROTOCOL_INFOA)protocol, out, length);
}
