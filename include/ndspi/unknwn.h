/* SPDX-License-Identifier: MIT */
/*
 * COM's binary shape on x86-64 Linux: an interface pointer points to an object whose first
 * word points to a table of functions in declaration order, each taking the object first.
 * In C++ an interface is a struct of pure virtual methods (g++ and clang++ lay out its
 * vtable exactly so, as long as it declares no destructor); in C it is a struct holding
 * lpVtbl. DECLARE_INTERFACE_ and STDMETHOD produce either from one declaration, so an
 * interface must list its base interfaces' methods first, as the C form needs them.
 */
#ifndef NDSPI_UNKNWN_H
#define NDSPI_UNKNWN_H

#include <ndspi/win32.h>

typedef struct _GUID {
    uint32_t Data1;
    uint16_t Data2;
    uint16_t Data3;
    uint8_t Data4[8];
} GUID;
typedef GUID IID;
typedef GUID CLSID;
typedef IID *LPIID;

#define STDMETHODCALLTYPE
#define STDAPICALLTYPE

#ifdef __cplusplus
#define REFGUID const GUID &
#define REFIID const IID &
#define REFCLSID const CLSID &
static inline bool IsEqualGUID(REFGUID a, REFGUID b)
{
    return memcmp(&a, &b, sizeof(GUID)) == 0;
}
static inline bool operator==(REFGUID a, REFGUID b) { return IsEqualGUID(a, b); }
static inline bool operator!=(REFGUID a, REFGUID b) { return !IsEqualGUID(a, b); }
#define EXTERN_C extern "C"
#define interface struct
#define STDMETHOD(method) virtual HRESULT STDMETHODCALLTYPE method
#define STDMETHOD_(type, method) virtual type STDMETHODCALLTYPE method
#define PURE = 0
#define THIS_
#define THIS void
#define DECLARE_INTERFACE(iface) struct iface
#define DECLARE_INTERFACE_(iface, base) struct iface : public base
#else
#define REFGUID const GUID *const
#define REFIID const IID *const
#define REFCLSID const CLSID *const
#define IsEqualGUID(a, b) (memcmp((a), (b), sizeof(GUID)) == 0)
#define EXTERN_C extern
#define interface struct
#define STDMETHOD(method) HRESULT(STDMETHODCALLTYPE *method)
#define STDMETHOD_(type, method) type(STDMETHODCALLTYPE *method)
#define PURE
#define THIS_ INTERFACE *This,
#define THIS INTERFACE *This
#define DECLARE_INTERFACE(iface)                                  \
    typedef struct iface { const struct iface##Vtbl *lpVtbl; } iface; \
    typedef struct iface##Vtbl iface##Vtbl;                       \
    struct iface##Vtbl
#define DECLARE_INTERFACE_(iface, base) DECLARE_INTERFACE(iface)
#endif
#define STDAPI EXTERN_C HRESULT STDAPICALLTYPE
#define IsEqualIID(a, b) IsEqualGUID(a, b)
#define IsEqualCLSID(a, b) IsEqualGUID(a, b)
#define IFACEMETHOD(method) STDMETHOD(method)
#define IFACEMETHOD_(type, method) STDMETHOD_(type, method)

/* An interface id is defined once, in libnetdirect-spi (as uuid.lib does on Windows). */
#if defined(NDSPI_DEFINE_IIDS) && !defined(__cplusplus)
#define DEFINE_GUID(name, l, w1, w2, b1, b2, b3, b4, b5, b6, b7, b8)                 \
    __attribute__((visibility("default"))) const GUID name =                         \
        { l, w1, w2, { b1, b2, b3, b4, b5, b6, b7, b8 } }
#else
#define DEFINE_GUID(name, l, w1, w2, b1, b2, b3, b4, b5, b6, b7, b8) EXTERN_C const GUID name
#endif

#undef INTERFACE
#define INTERFACE IUnknown
DECLARE_INTERFACE(IUnknown)
{
    STDMETHOD(QueryInterface)(THIS_ REFIID riid, void **object) PURE;
    STDMETHOD_(ULONG, AddRef)(THIS) PURE;
    STDMETHOD_(ULONG, Release)(THIS) PURE;
};
#undef INTERFACE
typedef IUnknown *LPUNKNOWN;

DEFINE_GUID(IID_IUnknown, 0x00000000, 0x0000, 0x0000, 0xc0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x46);

#define INTERFACE IClassFactory
DECLARE_INTERFACE_(IClassFactory, IUnknown)
{
    STDMETHOD(QueryInterface)(THIS_ REFIID riid, void **object) PURE;
    STDMETHOD_(ULONG, AddRef)(THIS) PURE;
    STDMETHOD_(ULONG, Release)(THIS) PURE;
    STDMETHOD(CreateInstance)(THIS_ IUnknown *outer, REFIID riid, void **object) PURE;
    STDMETHOD(LockServer)(THIS_ BOOL lock) PURE;
};
#undef INTERFACE

DEFINE_GUID(IID_IClassFactory, 0x00000001, 0x0000, 0x0000, 0xc0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x46);

#endif
