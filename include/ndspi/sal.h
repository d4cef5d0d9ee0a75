/* SPDX-License-Identifier: MIT */
/* Microsoft's source annotations carry no meaning for gcc or clang: they expand to nothing. */
#ifndef NDSPI_SAL_H
#define NDSPI_SAL_H

#define _In_
#define _In_opt_
#define _Out_
#define _Out_opt_
#define _Inout_
#define _Inout_opt_
#define _Deref_out_
#define _Deref_out_opt_
#define _Outptr_
#define _Outptr_opt_
#define _Analysis_noreturn_
#define _Ret_maybenull_
#define _Printf_format_string_
#define _Success_(expr)
#define _When_(expr, annotation)
#define _In_reads_(n)
#define _In_reads_opt_(n)
#define _In_reads_bytes_(n)
#define _In_reads_bytes_opt_(n)
#define _Out_writes_(n)
#define _Out_writes_opt_(n)
#define _Out_writes_bytes_(n)
#define _Out_writes_bytes_opt_(n)
#define _Out_writes_to_(n, c)
#define _Inout_updates_(n)
#define _Inout_updates_bytes_(n)
#define _Field_size_(n)
#define _Field_size_bytes_(n)
#define _In_bytecount_(n)
#define _In_opt_bytecount_(n)
#define _Out_bytecap_(n)
#define _Out_opt_bytecap_(n)
#define _Out_opt_bytecap_post_bytecount_(cap, count)
#define _Out_bytecap_post_bytecount_(cap, count)
#define _Inout_bytecount_(n)

/* The older __in/__out forms are left out: libstdc++ uses those names itself. */

#endif
