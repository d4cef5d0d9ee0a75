/* SPDX-License-Identifier: MIT */
/*
 * tchar.h in Windows' Unicode configuration: TCHAR is WCHAR and _tmain is wmain. The
 * library libnetdirect-spi-wmain.a (in pkg-config's --libs) holds a main() that converts
 * the UTF-8 command line to wide strings and calls wmain; programs with their own main
 * do not pull it in.
 */
#ifndef NDSPI_TCHAR_H
#define NDSPI_TCHAR_H

#include <ndspi/win32.h>

#ifndef UNICODE
#define UNICODE
#endif
#ifndef _UNICODE
#define _UNICODE
#endif

typedef WCHAR TCHAR, _TCHAR;
typedef WCHAR *LPTSTR;
typedef const WCHAR *LPCTSTR;
#define __T(x) L##x
#define _T(x) __T(x)
#define _TEXT(x) __T(x)
#ifndef TEXT
#define TEXT(x) __T(x)
#endif

#ifdef __cplusplus
extern "C" int wmain(int argc, WCHAR *argv[]);
#else
int wmain(int argc, WCHAR *argv[]);
#endif
#define _tmain wmain

#define _tcscmp wcscmp
#define _tcsicmp _wcsicmp
#define _tcsnicmp _wcsnicmp
#define _tcslen wcslen
#define _tcscpy_s wcscpy_s
#define _tcscat_s wcscat_s
#define _tcstol wcstol
#define _tcstoul wcstoul
#define _ttol _wtol
#define _ttoi _wtoi
#define _tprintf wprintf
#define _ftprintf fwprintf
#define _tfreopen _wfreopen
#define _tfopen _wfopen

#endif
