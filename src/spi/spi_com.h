/* SPDX-License-Identifier: MIT */
/* The IUnknown methods every object shares, generated per interface type. */
#ifndef ND_SPI_COM_H
#define ND_SPI_COM_H

#include "spi_int.h"

/* QueryInterface answers IUnknown, the object's own interface, and IND2Overlapped for
 * the overlapped families; each answer is the same pointer, with a reference added. */
HRESULT spi_query_interface(struct spi_object *o, REFIID riid, void **out, const IID *own,
                            bool overlapped);

#define SPI_UNKNOWN_METHODS(prefix, Iface, own_iid, overlapped)                         \
    static HRESULT prefix##_query_interface(Iface *This, REFIID riid, void **out)       \
    {                                                                                   \
        return spi_query_interface((struct spi_object *)This, riid, out, &own_iid,      \
                                   overlapped);                                          \
    }                                                                                   \
    static ULONG prefix##_add_ref(Iface *This)                                          \
    {                                                                                   \
        return spi_object_add_ref((struct spi_object *)This);                           \
    }                                                                                   \
    static ULONG prefix##_release(Iface *This)                                          \
    {                                                                                   \
        return spi_object_release((struct spi_object *)This);                           \
    }

#define SPI_UNKNOWN_VTBL(prefix)                                                        \
    .QueryInterface = prefix##_query_interface, .AddRef = prefix##_add_ref,             \
    .Release = prefix##_release

/* Every overlapped request: begin the bookkeeping, call the C API with the request's
 * nd_overlapped (named nd inside the call), settle it. */
#define SPI_OVERLAPPED_CALL(file, user, call_with_nd)                  \
    do {                                                              \
        nd_overlapped *nd = spi_ov_begin((file), (user));             \
        if ((user) && !nd)                                            \
            return ND_NO_MEMORY;                                      \
        return spi_ov_end(nd, (call_with_nd));                        \
    } while (0)

/* An interface id argument names the interface the caller wants back. */
static inline bool spi_iid_is(REFIID riid, const IID *want)
{
    return riid && IsEqualIID(riid, want);
}

#endif
