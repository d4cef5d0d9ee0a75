// SPDX-License-Identifier: MIT
/*
 * main() for programs written with _tmain/wmain: the command line as wide strings. In its
 * own archive (libnetdirect-spi-wmain.a), so a program with a main of its own never links
 * it. Arguments are decoded as UTF-8 whatever the locale; invalid bytes become U+FFFD.
 */
#include <ndspi/tchar.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* One UTF-8 sequence at @s into @out; returns the bytes consumed. */
static size_t utf8_decode(const unsigned char *s, WCHAR *out)
{
    uint32_t c = s[0];
    size_t n = c < 0x80 ? 1 : c >= 0xf0 && c < 0xf8 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 0;

    if (!n) {
        *out = 0xfffd;
        return 1;
    }
    if (n > 1)
        c &= 0x3fu >> (n - 1);
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xc0) != 0x80) {
            *out = 0xfffd;
            return i;
        }
        c = (c << 6) | (s[i] & 0x3f);
    }
    *out = (WCHAR)c;
    return n;
}

static WCHAR *widen(const char *arg)
{
    size_t len = strlen(arg), j = 0;
    WCHAR *w = malloc((len + 1) * sizeof(*w));

    if (!w)
        return NULL;
    for (size_t i = 0; i < len; j++)
        i += utf8_decode((const unsigned char *)arg + i, &w[j]);
    w[j] = 0;
    return w;
}

/* The strings live as long as the program, as Windows' own argv does (a program may keep
 * pointers into them and exit from anywhere). */
static WCHAR **wide_argv;

int main(int argc, char **argv)
{
    int rc;

    wide_argv = calloc((size_t)argc + 1, sizeof(*wide_argv));
    if (!wide_argv)
        return 1;
    for (int i = 0; i < argc; i++)
        if (!(wide_argv[i] = widen(argv[i])))
            return 1;
    rc = wmain(argc, wide_argv);
    for (int i = 0; i < argc; i++)
        free(wide_argv[i]);
    free(wide_argv);
    wide_argv = NULL;
    return rc;
}
