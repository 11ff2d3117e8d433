#pragma once
// TUTTI_API marks the public surface of libtutti. Everything else is built with
// -fvisibility=hidden, so only what carries this attribute is exported.
#if defined(__GNUC__) || defined(__clang__)
#define TUTTI_API [[gnu::visibility("default")]]
#else
#define TUTTI_API
#endif
