/* SPDX-License-Identifier: MIT */
/*
 * The Winsock names ND programs use. Socket addresses are Linux's own (struct sockaddr_in
 * has Windows' layout; AF_INET6 has Linux's value, which is what the library expects).
 */
#ifndef NDSPI_WINSOCK2_H
#define NDSPI_WINSOCK2_H

#include <ndspi/win32.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef int SOCKET;
#define INVALID_SOCKET (-1)
#define SOCKET_ERROR (-1)
#define WSAEINVAL 10022
#define WSAEFAULT 10014
#define WSANOTINITIALISED 10093
#define WSAVERNOTSUPPORTED 10092
typedef unsigned short ADDRESS_FAMILY;
typedef struct sockaddr SOCKADDR, *PSOCKADDR, *LPSOCKADDR;
typedef struct sockaddr_in SOCKADDR_IN, *PSOCKADDR_IN, *LPSOCKADDR_IN;
typedef struct sockaddr_in6 SOCKADDR_IN6, *PSOCKADDR_IN6;
typedef struct sockaddr_storage SOCKADDR_STORAGE, *PSOCKADDR_STORAGE;
typedef struct in_addr IN_ADDR, *PIN_ADDR;
typedef struct in6_addr IN6_ADDR, *PIN6_ADDR;

/* SOCKET_ADDRESS_LIST has the layout of nd_address_list. */
typedef struct _SOCKET_ADDRESS {
    LPSOCKADDR lpSockaddr;
    INT iSockaddrLength;
} SOCKET_ADDRESS, *PSOCKET_ADDRESS, *LPSOCKET_ADDRESS;

typedef struct _SOCKET_ADDRESS_LIST {
    INT iAddressCount;
    SOCKET_ADDRESS Address[1];
} SOCKET_ADDRESS_LIST, *PSOCKET_ADDRESS_LIST, *LPSOCKET_ADDRESS_LIST;

#define WSADESCRIPTION_LEN 256
#define WSASYS_STATUS_LEN 128
typedef struct WSAData {
    WORD wVersion;
    WORD wHighVersion;
    unsigned short iMaxSockets;
    unsigned short iMaxUdpDg;
    char *lpVendorInfo;
    char szDescription[WSADESCRIPTION_LEN + 1];
    char szSystemStatus[WSASYS_STATUS_LEN + 1];
} WSADATA, *LPWSADATA;

typedef struct _WSAPROTOCOL_INFOW WSAPROTOCOL_INFOW, *LPWSAPROTOCOL_INFOW;
typedef struct _WSAPROTOCOL_INFOA WSAPROTOCOL_INFOA, *LPWSAPROTOCOL_INFOA;

/* Sockets need no start-up on Linux: these check the version and count calls. */
int WSAStartup(WORD version, LPWSADATA data);
int WSACleanup(void);
int WSAGetLastError(void);

/*
 * WSAStringToAddress: "a.b.c.d", "a.b.c.d:port", an IPv6 address, or "[v6]:port", for
 * AF_INET or AF_INET6. The protocol info must be NULL. Returns 0, or SOCKET_ERROR with
 * WSAEINVAL (unparseable) or WSAEFAULT (*length too small, set to the size needed).
 */
INT WSAStringToAddressW(LPWSTR address, INT family, LPWSAPROTOCOL_INFOW protocol,
                        LPSOCKADDR out, LPINT length);
INT WSAStringToAddressA(LPSTR address, INT family, LPWSAPROTOCOL_INFOA protocol,
                        LPSOCKADDR out, LPINT length);
#define WSAStringToAddress WSAStringToAddressW

#ifdef __cplusplus
}
#endif
#endif
