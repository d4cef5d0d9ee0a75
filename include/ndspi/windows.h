/* SPDX-License-Identifier: MIT */
/* windows.h for ND programs: the Win32 subset of win32.h and COM's IUnknown. */
#ifndef NDSPI_WINDOWS_H
#define NDSPI_WINDOWS_H
#include <ndspi/win32.h>
#include <ndspi/unknwn.h>
#endif
