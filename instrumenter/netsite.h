/*
 * netsite.h — routing the app's network call sites through the runtime
 * (issue 16; instrumenter/README.md, "Network requests").
 *
 * Each site is rewritten IN PLACE, with an instruction of the same length
 * and the same stack effect, so that no code offset moves: branch offsets,
 * the exception table, StackMapTable, LineNumberTable and the rest stay
 * valid as they are. Only the constant pool grows (Methodref entries of the
 * runtime's hooks, deduplicated).
 *
 *   invokevirtual okhttp3/OkHttpClient$Builder.build()Lokhttp3/OkHttpClient;
 *     -> invokestatic io/beatline/runtime/net/OkHttp.build(Lokhttp3/OkHttpClient$Builder;)Lokhttp3/OkHttpClient;
 *   new okhttp3/OkHttpClient; dup; invokespecial okhttp3/OkHttpClient.<init>()V   (7 bytes)
 *     -> invokestatic io/beatline/runtime/net/OkHttp.newClient()Lokhttp3/OkHttpClient; nop x4
 *        (only when nothing jumps to, starts or ends an exception range at,
 *        or handles at the dup or the invokespecial, and no StackMapTable
 *        frame stands there: then no frame names the `new`'s Uninitialized
 *        type)
 *   invokevirtual java/net/URL.openConnection()Ljava/net/URLConnection;
 *     -> invokestatic io/beatline/runtime/net/Url.openConnection(Ljava/net/URL;)Ljava/net/URLConnection;
 *   invokevirtual java/net/URL.openConnection(Ljava/net/Proxy;)Ljava/net/URLConnection;
 *     -> invokestatic io/beatline/runtime/net/Url.openConnection(Ljava/net/URL;Ljava/net/Proxy;)Ljava/net/URLConnection;
 *
 * OkHttp's own classes (okhttp3/...) are never rewritten (its internal
 * builds, e.g. a web socket's client without listener, stay as they are);
 * the caller leaves out the runtime's classes.
 */
#ifndef BL_NETSITE_H
#define BL_NETSITE_H

#include <stddef.h>
#include "classfile.h"
#include "common/blerr.h"
#include "common/buf.h"

/* Rewrites the network call sites of cf. *n_sites (not NULL) receives the
 * number of sites rewritten; when it is > 0 the whole new class file is
 * appended to out (cf is unchanged; parse out to go on with it), else out
 * is untouched. Errors: BL_ETOOBIG (the constant pool would exceed 65,535
 * entries; message in err), BL_ENOMEM; out may then hold part of a class:
 * the caller discards it. Code that cannot be decoded is left
 * to the probe rewriter (no site is rewritten in that method). Thread-safe
 * for distinct bl_cf objects. */
bl_err bl_net_rewrite(const bl_cf *cf, bl_buf *out, size_t *n_sites, char *err, size_t errlen);

#endif
