#pragma once
/* TUTTI_API marks the public surface of libtutti. Everything else is built with
   -fvisibility=hidden (and a linker version script), so only what carries this attribute is
   exported. This header is shared by the C++ API and the C API (tutti.h), so it must stay
   valid C99: C has no [[...]] attributes before C23, hence the GNU spelling there. */
#if defined(__GNUC__) || defined(__clang__)
#if defined(__cplusplus)
#define TUTTI_API [[gnu::visibility("default")]]
#else
#define TUTTI_API __attribute__((visibility("default")))
#endif
#else
#define TUTTI_API
#endif
