// SPDX-License-Identifier: MIT
/*
 * printf and wprintf with Windows' format rules, and the wide-string helpers of win32.h.
 * Both print functions write UTF-8 bytes, so a program can mix them on one stream (glibc's
 * own wprintf would fix the stream's orientation to wide and drop later printf output).
 */
#include "spi_int.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <strings.h>

/* Each conversion is formatted by the C library with a spec this file assembled from
 * characters it parsed and checked (flags, digits, one length, one conversion), so the
 * formats cannot be literals. */
#pragma GCC diagnostic ignored "-Wformat-nonliteral"

struct outbuf {
    char *p;
    size_t len, cap;
    bool failed;
};

static void out_bytes(struct outbuf *o, const char *s, size_t n)
{
    if (o->failed)
        return;
    if (o->len + n + 1 > o->cap) {
        size_t cap = o->cap ? o->cap : 256;
        char *p;
        while (cap < o->len + n + 1)
            cap *= 2;
        p = realloc(o->p, cap);
        if (!p) {
            o->failed = true;
            return;
        }
        o->p = p;
        o->cap = cap;
    }
    memcpy(o->p + o->len, s, n);
    o->len += n;
}

static size_t utf8_encode(uint32_t c, char out[4])
{
    if (c < 0x80) {
        out[0] = (char)c;
        return 1;
    }
    if (c < 0x800) {
        out[0] = (char)(0xc0 | (c >> 6));
        out[1] = (char)(0x80 | (c & 0x3f));
        return 2;
    }
    if (c < 0x10000 && (c < 0xd800 || c > 0xdfff)) {
        out[0] = (char)(0xe0 | (c >> 12));
        out[1] = (char)(0x80 | ((c >> 6) & 0x3f));
        out[2] = (char)(0x80 | (c & 0x3f));
        return 3;
    }
    if (c < 0x110000 && c >= 0x10000) {
        out[0] = (char)(0xf0 | (c >> 18));
        out[1] = (char)(0x80 | ((c >> 12) & 0x3f));
        out[2] = (char)(0x80 | ((c >> 6) & 0x3f));
        out[3] = (char)(0x80 | (c & 0x3f));
        return 4;
    }
    out[0] = '?';
    return 1;
}

/* A wide string as UTF-8 in @o (NUL-terminated), at most @max wide characters. */
static void wide_to_utf8(struct outbuf *o, const WCHAR *s, size_t max)
{
    char enc[4];

    for (size_t i = 0; i < max && s[i]; i++)
        out_bytes(o, enc, utf8_encode((uint32_t)s[i], enc));
    out_bytes(o, "", 1);
}

/* The format, read one character at a time whatever its width. */
struct fmt {
    const char *n;
    const WCHAR *w;
    size_t i;
};

static uint32_t fmt_peek(const struct fmt *f)
{
    return f->w ? (uint32_t)f->w[f->i] : (uint8_t)f->n[f->i];
}

static uint32_t fmt_next(struct fmt *f)
{
    uint32_t c = fmt_peek(f);
    if (c)
        f->i++;
    return c;
}

enum arg_size { SZ_INT, SZ_SHORT, SZ_CHAR, SZ_64, SZ_SIZE };

struct spec {
    char head[48];       /* "%", flags, width and precision, as C printf reads them */
    size_t head_len;
    enum arg_size size;
    int width_kind;      /* -1 = wide argument, 1 = narrow, 0 = the function's default */
    uint32_t conv;
};

static void head_add(struct spec *s, char c)
{
    if (s->head_len + 2 < sizeof(s->head))
        s->head[s->head_len++] = c;
    s->head[s->head_len] = 0;
}

static void head_add_int(struct spec *s, int v)
{
    char num[16];
    int n = snprintf(num, sizeof(num), "%d", v);
    for (int i = 0; i < n; i++)
        head_add(s, num[i]);
}

static void parse_number_or_star(struct fmt *f, struct spec *s, va_list *ap)
{
    if (fmt_peek(f) == '*') {
        fmt_next(f);
        head_add_int(s, va_arg(*ap, int));
        return;
    }
    while (fmt_peek(f) >= '0' && fmt_peek(f) <= '9')
        head_add(s, (char)fmt_next(f));
}

/* Flags, width, precision and Windows' size prefixes (l is 32 bits, I64, I32, I, w). */
static void parse_spec(struct fmt *f, struct spec *s, va_list *ap)
{
    uint32_t c;

    memset(s, 0, sizeof(*s));
    head_add(s, '%');
    while ((c = fmt_peek(f)) && strchr("-+ #0", (int)c))
        head_add(s, (char)fmt_next(f));
    parse_number_or_star(f, s, ap);
    if (fmt_peek(f) == '.') {
        head_add(s, (char)fmt_next(f));
        parse_number_or_star(f, s, ap);
    }
    for (;;) {
        c = fmt_peek(f);
        if (c == 'h') {
            fmt_next(f);
            s->size = s->size == SZ_SHORT ? SZ_CHAR : SZ_SHORT;
            s->width_kind = 1;
        } else if (c == 'l' || c == 'w') {
            fmt_next(f);
            if (c == 'l' && fmt_peek(f) == 'l') {
                fmt_next(f);
                s->size = SZ_64;
            }
            s->width_kind = -1;
        } else if (c == 'L' || c == 'q') {
            fmt_next(f);
            s->size = SZ_64;
        } else if (c == 'z' || c == 't' || c == 'j') {
            fmt_next(f);
            s->size = SZ_SIZE;
        } else if (c == 'I') {
            fmt_next(f);
            if (fmt_peek(f) == '6') {
                fmt_next(f);
                fmt_next(f);   /* the 4 of I64 */
                s->size = SZ_64;
            } else if (fmt_peek(f) == '3') {
                fmt_next(f);
                fmt_next(f);
                s->size = SZ_INT;
            } else {
                s->size = SZ_SIZE;
            }
        } else {
            break;
        }
    }
    s->conv = fmt_next(f);
}

static void emit_integer(struct outbuf *o, struct spec *s, va_list *ap)
{
    char buf[128];
    bool is_signed = s->conv == 'd' || s->conv == 'i';
    int n;

    if (s->size == SZ_64 || s->size == SZ_SIZE) {
        head_add(s, 'l');
        head_add(s, 'l');
        head_add(s, (char)s->conv);
        n = is_signed ? snprintf(buf, sizeof(buf), s->head, (long long)va_arg(*ap, long long))
                      : snprintf(buf, sizeof(buf), s->head, va_arg(*ap, unsigned long long));
    } else {
        int v = va_arg(*ap, int);
        if (s->size == SZ_SHORT)
            v = is_signed ? (short)v : (unsigned short)v;
        else if (s->size == SZ_CHAR)
            v = is_signed ? (signed char)v : (unsigned char)v;
        head_add(s, (char)s->conv);
        n = snprintf(buf, sizeof(buf), s->head, v);
    }
    if (n > 0)
        out_bytes(o, buf, (size_t)n < sizeof(buf) ? (size_t)n : sizeof(buf) - 1);
}

/* Strings and characters: @wide says whether the argument is a wide one. */
static void emit_text(struct outbuf *o, struct spec *s, bool wide, va_list *ap)
{
    struct outbuf tmp = { 0 };
    bool is_char = s->conv == 'c' || s->conv == 'C';
    char *buf;
    int n;

    if (is_char) {
        char enc[5] = { 0 };
        uint32_t c = wide ? (uint32_t)va_arg(*ap, wint_t) : (uint8_t)va_arg(*ap, int);
        enc[utf8_encode(c, enc)] = 0;
        out_bytes(&tmp, enc, strlen(enc) + 1);
    } else if (wide) {
        const WCHAR *ws = va_arg(*ap, const WCHAR *);
        if (ws)
            wide_to_utf8(&tmp, ws, SIZE_MAX);
        else
            out_bytes(&tmp, "(null)", 7);
    } else {
        const char *ns = va_arg(*ap, const char *);
        out_bytes(&tmp, ns ? ns : "(null)", strlen(ns ? ns : "(null)") + 1);
    }
    if (tmp.failed) {
        o->failed = true;
        free(tmp.p);
        return;
    }
    head_add(s, 's');
    n = snprintf(NULL, 0, s->head, tmp.p);
    buf = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (buf && snprintf(buf, (size_t)n + 1, s->head, tmp.p) == n)
        out_bytes(o, buf, (size_t)n);
    free(buf);
    free(tmp.p);
}

static void emit_other(struct outbuf *o, struct spec *s, va_list *ap)
{
    char buf[512];
    int n = -1;

    switch (s->conv) {
    case 'f': case 'F': case 'e': case 'E': case 'g': case 'G': case 'a': case 'A':
        head_add(s, (char)s->conv);
        n = snprintf(buf, sizeof(buf), s->head, va_arg(*ap, double));
        break;
    case 'p':
        head_add(s, 'p');
        n = snprintf(buf, sizeof(buf), s->head, va_arg(*ap, void *));
        break;
    case 'n':
        (void)va_arg(*ap, int *);   /* %n writes nothing here */
        return;
    case '%':
        out_bytes(o, "%", 1);
        return;
    default: {
        char enc[4];
        out_bytes(o, s->head, s->head_len);   /* unknown conversion: printed as written */
        if (s->conv)
            out_bytes(o, enc, utf8_encode(s->conv, enc));
        return;
    }
    }
    if (n > 0)
        out_bytes(o, buf, (size_t)n < sizeof(buf) ? (size_t)n : sizeof(buf) - 1);
}

/* @wide_default: %s and %c take wide arguments (wprintf) or narrow ones (printf). */
static int format_to(FILE *stream, struct fmt *f, bool wide_default, va_list ap_in)
{
    struct outbuf o = { 0 };
    struct spec s;
    va_list ap;
    uint32_t c;
    int rc;

    va_copy(ap, ap_in);
    while ((c = fmt_next(f))) {
        char enc[4];
        if (c != '%') {
            out_bytes(&o, enc, utf8_encode(c, enc));
            continue;
        }
        parse_spec(f, &s, &ap);
        if (!s.conv)
            break;
        if (strchr("diouxX", (int)s.conv))
            emit_integer(&o, &s, &ap);
        else if (s.conv == 's' || s.conv == 'c')
            emit_text(&o, &s, s.width_kind ? s.width_kind < 0 : wide_default, &ap);
        else if (s.conv == 'S' || s.conv == 'C')
            emit_text(&o, &s, s.width_kind ? s.width_kind < 0 : !wide_default, &ap);
        else
            emit_other(&o, &s, &ap);
    }
    va_end(ap);
    if (o.failed) {
        free(o.p);
        errno = ENOMEM;
        return -1;
    }
    rc = o.len && fwrite(o.p, 1, o.len, stream) != o.len ? -1 : (int)o.len;
    free(o.p);
    return rc;
}

SPI_API int ndw_vfwprintf(FILE *stream, const WCHAR *format, va_list ap)
{
    struct fmt f = { .w = format };

    if (!stream || !format)
        return -1;
    return format_to(stream, &f, true, ap);
}

SPI_API int ndw_wprintf(const WCHAR *format, ...)
{
    va_list ap;
    int rc;

    va_start(ap, format);
    rc = ndw_vfwprintf(stdout, format, ap);
    va_end(ap);
    return rc;
}

SPI_API int ndw_fwprintf(FILE *stream, const WCHAR *format, ...)
{
    va_list ap;
    int rc;

    va_start(ap, format);
    rc = ndw_vfwprintf(stream, format, ap);
    va_end(ap);
    return rc;
}

static int narrow_vfprintf(FILE *stream, const char *format, va_list ap)
{
    struct fmt f = { .n = format };

    if (!stream || !format)
        return -1;
    return format_to(stream, &f, false, ap);
}

SPI_API int ndw_printf(const char *format, ...)
{
    va_list ap;
    int rc;

    va_start(ap, format);
    rc = narrow_vfprintf(stdout, format, ap);
    va_end(ap);
    return rc;
}

SPI_API int ndw_fprintf(FILE *stream, const char *format, ...)
{
    va_list ap;
    int rc;

    va_start(ap, format);
    rc = narrow_vfprintf(stream, format, ap);
    va_end(ap);
    return rc;
}

/* --- Wide strings and files --------------------------------------------------------------- */

/* A wide path or mode as UTF-8, or NULL (errno set). */
static char *utf8_dup(const WCHAR *s)
{
    struct outbuf o = { 0 };

    if (!s) {
        errno = EINVAL;
        return NULL;
    }
    wide_to_utf8(&o, s, SIZE_MAX);
    if (o.failed) {
        free(o.p);
        errno = ENOMEM;
        return NULL;
    }
    return o.p;
}

SPI_API FILE *_wfreopen(const WCHAR *path, const WCHAR *mode, FILE *stream)
{
    char *p = utf8_dup(path), *m = utf8_dup(mode);
    FILE *f = p && m ? freopen(p, m, stream) : NULL;

    free(p);
    free(m);
    return f;
}

SPI_API FILE *_wfopen(const WCHAR *path, const WCHAR *mode)
{
    char *p = utf8_dup(path), *m = utf8_dup(mode);
    FILE *f = p && m ? fopen(p, m) : NULL;

    free(p);
    free(m);
    return f;
}

/* _fcloseall closes the streams a program opened; stdout may have been reopened onto a
 * log file (_tfreopen), so this flushes every stream instead of closing any. */
SPI_API int _fcloseall(void)
{
    fflush(NULL);
    return 0;
}

SPI_API long _wtol(const WCHAR *s) { return s ? wcstol(s, NULL, 10) : 0; }
SPI_API int _wtoi(const WCHAR *s) { return (int)_wtol(s); }
SPI_API int _wcsicmp(const WCHAR *a, const WCHAR *b) { return wcscasecmp(a, b); }
SPI_API int _wcsnicmp(const WCHAR *a, const WCHAR *b, size_t n) { return wcsncasecmp(a, b, n); }
SPI_API int _stricmp(const char *a, const char *b) { return strcasecmp(a, b); }

SPI_API errno_t wcscpy_s(WCHAR *dest, size_t dest_count, const WCHAR *src)
{
    size_t n;

    if (!dest || !dest_count)
        return EINVAL;
    if (!src) {
        dest[0] = 0;
        return EINVAL;
    }
    n = wcslen(src);
    if (n >= dest_count) {
        dest[0] = 0;
        return ERANGE;
    }
    memcpy(dest, src, (n + 1) * sizeof(WCHAR));
    return 0;
}

SPI_API errno_t wcscat_s(WCHAR *dest, size_t dest_count, const WCHAR *src)
{
    size_t have;

    if (!dest || !dest_count || !src)
        return EINVAL;
    have = wcsnlen(dest, dest_count);
    if (have == dest_count)
        return EINVAL;
    return wcscpy_s(dest + have, dest_count - have, src);
}
