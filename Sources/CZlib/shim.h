// The system zlib (Debian: zlib1g-dev), seen from Swift.
//
// zlib's init functions are macros that pass the library version and the size of z_stream, which
// Swift cannot import; the inline function below calls the real entry point the way the macro does.
// https://zlib.net/manual.html (deflateInit2: windowBits 16 + 8..15 writes a gzip wrapper)
#ifndef STREAMUP_CZLIB_SHIM_H
#define STREAMUP_CZLIB_SHIM_H

#include <zlib.h>

/// deflateInit2 with windowBits 15 + 16 (gzip header and trailer), memLevel 8, the default strategy.
static inline int czlib_deflate_init_gzip(z_streamp stream, int level) {
    return deflateInit2(stream, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
}

#endif
