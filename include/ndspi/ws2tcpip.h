/* SPDX-License-Identifier: MIT */
/* Winsock's TCP/IP additions: the Linux socket headers winsock2.h already includes. */
#ifndef NDSPI_WS2TCPIP_H
#define NDSPI_WS2TCPIP_H
#include <ndspi/winsock2.h>
#endif
