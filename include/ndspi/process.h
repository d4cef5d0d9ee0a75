/* SPDX-License-Identifier: MIT */
/* process.h: ND programs include it for threads, which win32.h declares (CreateThread). */
#ifndef NDSPI_PROCESS_H
#define NDSPI_PROCESS_H
#include <ndspi/win32.h>
#include <unistd.h>
#endif
