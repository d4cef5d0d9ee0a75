/* SPDX-License-Identifier: MIT */
/*
 * The subset of Win32 that programs written for Network Direct use, on Linux: types with
 * Windows' widths (LONG and ULONG are 32 bits, WCHAR is the platform's wchar_t), COM
 * result codes, events, threads, I/O completion ports over ND overlapped files, the
 * process heap, timers and wide-string helpers. It is only as large as the ND SDK's
 * examples and tests need; anything else a program calls will fail to compile or link,
 * which is the intended signal. Functions are provided by libnetdirect-spi.
 */
#ifndef NDSPI_WIN32_H
#define NDSPI_WIN32_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>
#include <wctype.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#ifdef __cplusplus
/* The C++ wrappers #undef the C names they wrap; include them before the macros below
 * (printf, wprintf) so that a later #include of them changes nothing. */
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cwchar>
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Calling conventions and declaration decorations mean nothing on x86-64 Linux. */
#define WINAPI
#define APIENTRY
#define CALLBACK
#define __stdcall
#define __cdecl
#define __callback
#define __forceinline inline __attribute__((always_inline))
#define __declspec(x)
#define UNREFERENCED_PARAMETER(p) ((void)(p))
#define __fallthrough __attribute__((fallthrough))

typedef void VOID;
typedef char CHAR;
typedef unsigned char UCHAR;
typedef uint8_t BYTE;
typedef int16_t SHORT;
typedef uint16_t USHORT;
typedef uint16_t WORD;
typedef int INT;
typedef unsigned int UINT;
typedef int32_t LONG;
typedef uint32_t ULONG;
typedef uint32_t DWORD;
typedef int BOOL;
typedef uint8_t BOOLEAN;
typedef float FLOAT;
typedef int64_t LONGLONG;
typedef uint64_t ULONGLONG;
typedef int64_t LONG64;
typedef uint64_t ULONG64;
typedef uint64_t DWORD64;
typedef int8_t INT8;
typedef uint8_t UINT8;
typedef int16_t INT16;
typedef uint16_t UINT16;
typedef int32_t INT32;
typedef uint32_t UINT32;
typedef int64_t INT64;
typedef uint64_t UINT64;
typedef intptr_t INT_PTR;
typedef uintptr_t UINT_PTR;
typedef intptr_t LONG_PTR;
typedef uintptr_t ULONG_PTR;
typedef uintptr_t DWORD_PTR;
typedef size_t SIZE_T;
typedef ssize_t SSIZE_T;
typedef ULONG_PTR KAFFINITY;
typedef void *PVOID;
typedef void *LPVOID;
typedef const void *LPCVOID;
typedef void *HANDLE;
typedef HANDLE *PHANDLE;
typedef LONG HRESULT;
typedef LONG NTSTATUS;
typedef wchar_t WCHAR;
typedef WCHAR *PWSTR, *LPWSTR;
typedef const WCHAR *PCWSTR, *LPCWSTR;
typedef CHAR *PSTR, *LPSTR;
typedef const CHAR *PCSTR, *LPCSTR;
typedef DWORD *LPDWORD, *PDWORD;
typedef LONG *PLONG, *LPLONG;
typedef ULONG *PULONG;
typedef INT *LPINT, *PINT;
typedef BYTE *PBYTE, *LPBYTE;
typedef ULONG_PTR *PULONG_PTR;
typedef int errno_t;

#define TRUE 1
#define FALSE 0
#define CONST const
#define INFINITE 0xFFFFFFFFu
#define INVALID_HANDLE_VALUE ((HANDLE)(LONG_PTR)-1)
#define MAKEWORD(lo, hi) ((WORD)(((BYTE)((lo) & 0xff)) | ((WORD)((BYTE)((hi) & 0xff))) << 8))
#define LOBYTE(w) ((BYTE)((w) & 0xff))
#define HIBYTE(w) ((BYTE)(((w) >> 8) & 0xff))

/* HRESULTs. ND's statuses are NTSTATUS values used as HRESULTs (ndstatus.h). */
#define S_OK ((HRESULT)0)
#define S_FALSE ((HRESULT)1)
#define E_NOTIMPL ((HRESULT)0x80004001u)
#define E_NOINTERFACE ((HRESULT)0x80004002u)
#define E_POINTER ((HRESULT)0x80004003u)
#define E_FAIL ((HRESULT)0x80004005u)
#define E_OUTOFMEMORY ((HRESULT)0x8007000Eu)
#define E_INVALIDARG ((HRESULT)0x80070057u)
#define CLASS_E_NOAGGREGATION ((HRESULT)0x80040110u)
#define CLASS_E_CLASSNOTAVAILABLE ((HRESULT)0x80040111u)
#define SUCCEEDED(hr) (((HRESULT)(hr)) >= 0)
#define FAILED(hr) (((HRESULT)(hr)) < 0)

/* GetLastError codes. */
#define ERROR_SUCCESS 0u
#define NO_ERROR 0u
#define ERROR_INVALID_HANDLE 6u
#define ERROR_NOT_ENOUGH_MEMORY 8u
#define ERROR_OUTOFMEMORY 14u
#define ERROR_NOT_SUPPORTED 50u
#define ERROR_INVALID_PARAMETER 87u
#define ERROR_ABANDONED_WAIT_0 735u
#define ERROR_OPERATION_ABORTED 995u
#define ERROR_IO_PENDING 997u
#define WAIT_OBJECT_0 0u
#define WAIT_TIMEOUT 258u
#define WAIT_FAILED 0xFFFFFFFFu

typedef union _LARGE_INTEGER {
    struct {
        DWORD LowPart;
        LONG HighPart;
    };
    struct {
        DWORD LowPart;
        LONG HighPart;
    } u;
    LONGLONG QuadPart;
} LARGE_INTEGER, *PLARGE_INTEGER;

typedef struct _FILETIME {
    DWORD dwLowDateTime;
    DWORD dwHighDateTime;
} FILETIME, *PFILETIME, *LPFILETIME;

typedef struct _SYSTEM_INFO {
    union {
        DWORD dwOemId;
        struct {
            WORD wProcessorArchitecture;
            WORD wReserved;
        };
    };
    DWORD dwPageSize;
    LPVOID lpMinimumApplicationAddress;
    LPVOID lpMaximumApplicationAddress;
    DWORD_PTR dwActiveProcessorMask;
    DWORD dwNumberOfProcessors;
    DWORD dwProcessorType;
    DWORD dwAllocationGranularity;
    WORD wProcessorLevel;
    WORD wProcessorRevision;
} SYSTEM_INFO, *LPSYSTEM_INFO;

/*
 * OVERLAPPED: while a request is pending, Internal reads STATUS_PENDING and InternalHigh
 * belongs to the library; once complete, Internal is the request's status and
 * InternalHigh the bytes it reports. A set low bit in hEvent keeps the completion off
 * the completion port, as on Windows.
 */
typedef struct _OVERLAPPED {
    ULONG_PTR Internal;
    ULONG_PTR InternalHigh;
    union {
        struct {
            DWORD Offset;
            DWORD OffsetHigh;
        };
        PVOID Pointer;
    };
    HANDLE hEvent;
} OVERLAPPED, *LPOVERLAPPED;

typedef struct _SECURITY_ATTRIBUTES {
    DWORD nLength;
    LPVOID lpSecurityDescriptor;
    BOOL bInheritHandle;
} SECURITY_ATTRIBUTES, *LPSECURITY_ATTRIBUTES;

typedef DWORD (*LPTHREAD_START_ROUTINE)(LPVOID parameter);

/* Errors and handles. CloseHandle closes events, threads, completion ports and ND
 * overlapped files. */
DWORD GetLastError(void);
void SetLastError(DWORD error);
BOOL CloseHandle(HANDLE handle);

/* Events and threads; WaitForSingleObject waits for either. */
HANDLE CreateEventW(LPSECURITY_ATTRIBUTES attributes, BOOL manual_reset, BOOL initial_state,
                    LPCWSTR name);
HANDLE CreateEventA(LPSECURITY_ATTRIBUTES attributes, BOOL manual_reset, BOOL initial_state,
                    LPCSTR name);
BOOL SetEvent(HANDLE event);
BOOL ResetEvent(HANDLE event);
DWORD WaitForSingleObject(HANDLE handle, DWORD timeout_ms);
HANDLE CreateThread(LPSECURITY_ATTRIBUTES attributes, SIZE_T stack_size,
                    LPTHREAD_START_ROUTINE start, LPVOID parameter, DWORD creation_flags,
                    LPDWORD thread_id);
void Sleep(DWORD ms);
DWORD GetCurrentThreadId(void);
DWORD GetCurrentProcessId(void);

/*
 * I/O completion ports. A port created with an ND overlapped file (IND2Adapter::
 * CreateOverlappedFile) delivers that file's completions; a port created with
 * INVALID_HANDLE_VALUE carries only posted packets. One file per port.
 */
HANDLE CreateIoCompletionPort(HANDLE file, HANDLE existing_port, ULONG_PTR key, DWORD threads);
BOOL GetQueuedCompletionStatus(HANDLE port, LPDWORD bytes, PULONG_PTR key,
                               LPOVERLAPPED *overlapped, DWORD timeout_ms);
BOOL PostQueuedCompletionStatus(HANDLE port, DWORD bytes, ULONG_PTR key, LPOVERLAPPED overlapped);

/* The process heap is the C heap. */
#define HEAP_ZERO_MEMORY 0x00000008u
HANDLE GetProcessHeap(void);
LPVOID HeapAlloc(HANDLE heap, DWORD flags, SIZE_T bytes);
BOOL HeapFree(HANDLE heap, DWORD flags, LPVOID mem);

/* Time and processors: a monotonic nanosecond counter; /proc/stat in 100 ns units. */
BOOL QueryPerformanceCounter(LARGE_INTEGER *count);
BOOL QueryPerformanceFrequency(LARGE_INTEGER *frequency);
BOOL GetSystemTimes(FILETIME *idle, FILETIME *kernel, FILETIME *user);
void GetSystemInfo(LPSYSTEM_INFO info);
DWORD GetTickCount(void);
ULONGLONG GetTickCount64(void);

/*
 * wprintf and fwprintf with Windows' rules: %s and %c take wide arguments, %S, %hs and %C
 * narrow ones, l is 32 bits for integers, I64 is 64 bits and I is size_t. Output goes to
 * the byte stream as UTF-8, so printf and wprintf can share stdout.
 */
int ndw_wprintf(const WCHAR *format, ...);
int ndw_fwprintf(FILE *stream, const WCHAR *format, ...);
int ndw_vfwprintf(FILE *stream, const WCHAR *format, va_list args);
int ndw_printf(const char *format, ...);
int ndw_fprintf(FILE *stream, const char *format, ...);
#define wprintf ndw_wprintf
/* printf too follows Windows' rules (%lu is 32 bits, %I64d 64, %S a wide string). */
#define printf ndw_printf
#define fprintf ndw_fprintf
#define fwprintf ndw_fwprintf
#define vfwprintf ndw_vfwprintf

FILE *_wfreopen(const WCHAR *path, const WCHAR *mode, FILE *stream);
FILE *_wfopen(const WCHAR *path, const WCHAR *mode);
int _fcloseall(void);
long _wtol(const WCHAR *s);
int _wtoi(const WCHAR *s);
int _wcsicmp(const WCHAR *a, const WCHAR *b);
int _wcsnicmp(const WCHAR *a, const WCHAR *b, size_t n);
int _stricmp(const char *a, const char *b);
errno_t wcscpy_s(WCHAR *dest, size_t dest_count, const WCHAR *src);
errno_t wcscat_s(WCHAR *dest, size_t dest_count, const WCHAR *src);

#define RtlZeroMemory(p, n) memset((p), 0, (n))
#define ZeroMemory(p, n) memset((p), 0, (n))
#define RtlCopyMemory(d, s, n) memcpy((d), (s), (n))
#define CopyMemory(d, s, n) memcpy((d), (s), (n))
#define RtlFillMemory(p, n, v) memset((p), (v), (n))
#define FillMemory(p, n, v) memset((p), (v), (n))
#define FIELD_OFFSET(type, field) ((LONG)offsetof(type, field))
#define CONTAINING_RECORD(address, type, field) \
    ((type *)((char *)(address) - (ULONG_PTR)(&((type *)0)->field)))

/* Interlocked operations: full barriers, as on Windows. */
static inline LONG InterlockedIncrement(LONG volatile *p)
{
    return __atomic_add_fetch(p, 1, __ATOMIC_SEQ_CST);
}
static inline LONG InterlockedDecrement(LONG volatile *p)
{
    return __atomic_sub_fetch(p, 1, __ATOMIC_SEQ_CST);
}
static inline LONG InterlockedExchange(LONG volatile *p, LONG v)
{
    return __atomic_exchange_n(p, v, __ATOMIC_SEQ_CST);
}
static inline LONG InterlockedExchangeAdd(LONG volatile *p, LONG v)
{
    return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST);
}
static inline LONG InterlockedCompareExchange(LONG volatile *p, LONG exchange, LONG comparand)
{
    __atomic_compare_exchange_n(p, &comparand, exchange, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
    return comparand;
}
static inline LONG64 InterlockedIncrement64(LONG64 volatile *p)
{
    return __atomic_add_fetch(p, 1, __ATOMIC_SEQ_CST);
}
static inline LONG64 InterlockedDecrement64(LONG64 volatile *p)
{
    return __atomic_sub_fetch(p, 1, __ATOMIC_SEQ_CST);
}
static inline LONG64 InterlockedExchangeAdd64(LONG64 volatile *p, LONG64 v)
{
    return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST);
}
static inline LONG64 InterlockedExchange64(LONG64 volatile *p, LONG64 v)
{
    return __atomic_exchange_n(p, v, __ATOMIC_SEQ_CST);
}
static inline LONG64 InterlockedCompareExchange64(LONG64 volatile *p, LONG64 exchange,
                                                  LONG64 comparand)
{
    __atomic_compare_exchange_n(p, &comparand, exchange, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
    return comparand;
}
static inline PVOID InterlockedCompareExchangePointer(PVOID volatile *p, PVOID exchange,
                                                      PVOID comparand)
{
    __atomic_compare_exchange_n(p, &comparand, exchange, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
    return comparand;
}
static inline PVOID InterlockedExchangePointer(PVOID volatile *p, PVOID v)
{
    return __atomic_exchange_n(p, v, __ATOMIC_SEQ_CST);
}
#define MemoryBarrier() __atomic_thread_fence(__ATOMIC_SEQ_CST)
#define YieldProcessor() __builtin_ia32_pause()

#ifdef __cplusplus
}

/* Windows' C++ overloads of the Interlocked family for the other 32- and 64-bit types
 * (long is 64 bits here, so the long overloads are 64-bit operations). */
static inline unsigned InterlockedIncrement(unsigned volatile *p)
{
    return __atomic_add_fetch(p, 1u, __ATOMIC_SEQ_CST);
}
static inline unsigned InterlockedDecrement(unsigned volatile *p)
{
    return __atomic_sub_fetch(p, 1u, __ATOMIC_SEQ_CST);
}
static inline long InterlockedIncrement(long volatile *p)
{
    return __atomic_add_fetch(p, 1, __ATOMIC_SEQ_CST);
}
static inline long InterlockedDecrement(long volatile *p)
{
    return __atomic_sub_fetch(p, 1, __ATOMIC_SEQ_CST);
}
static inline unsigned long InterlockedIncrement(unsigned long volatile *p)
{
    return __atomic_add_fetch(p, 1, __ATOMIC_SEQ_CST);
}
static inline unsigned long InterlockedDecrement(unsigned long volatile *p)
{
    return __atomic_sub_fetch(p, 1, __ATOMIC_SEQ_CST);
}
static inline unsigned InterlockedExchangeAdd(unsigned volatile *p, unsigned v)
{
    return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST);
}
static inline long long InterlockedExchangeAdd64(long long volatile *p, long long v)
{
    return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST);
}
static inline long long InterlockedIncrement64(long long volatile *p)
{
    return __atomic_add_fetch(p, 1, __ATOMIC_SEQ_CST);
}
static inline unsigned InterlockedCompareExchange(unsigned volatile *p, unsigned exchange,
                                                  unsigned comparand)
{
    __atomic_compare_exchange_n(p, &comparand, exchange, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
    return comparand;
}

/* The secure string functions' array forms. */
template <size_t N>
static inline errno_t wcscpy_s(WCHAR (&dest)[N], const WCHAR *src) { return wcscpy_s(dest, N, src); }
template <size_t N>
static inline errno_t wcscat_s(WCHAR (&dest)[N], const WCHAR *src) { return wcscat_s(dest, N, src); }

/* min and max as Windows programs use them, without macros that would break the C++
 * library's own std::min and numeric_limits<T>::min(). */
template <typename A, typename B>
static inline auto min(A a, B b) -> decltype(0 ? A() : B()) { return b < a ? b : a; }
template <typename A, typename B>
static inline auto max(A a, B b) -> decltype(0 ? A() : B()) { return a < b ? b : a; }
template <typename T, size_t N>
static inline constexpr size_t ndw_countof_(T (&)[N]) { return N; }
#define _countof(a) ndw_countof_(a)
#else
#ifndef min
#define min(a, b) (((a) < (b)) ? (a) : (b))
#endif
#ifndef max
#define max(a, b) (((a) > (b)) ? (a) : (b))
#endif
#define _countof(a) (sizeof(a) / sizeof((a)[0]))
#endif

#define ARRAYSIZE(a) _countof(a)

/* Programs build as Windows' Unicode configuration: TCHAR is WCHAR (tchar.h). */
#define CreateEvent CreateEventW

#endif
