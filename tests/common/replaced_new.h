#pragma once
// Whether a test binary may replace the global operator new and delete (to count what the
// code under test allocates). Everywhere but under clang's ThreadSanitizer, whose runtime
// is linked statically with its own operator new (GCC's is a shared library, which a
// program's definitions take precedence over): there, a test that counts allocations skips
// itself, and the release and ASan runs count them.
#if defined(__clang__) && defined(TUTTI_TSAN)
#define TUTTI_TEST_REPLACES_NEW 0
#endif
#ifndef TUTTI_TEST_REPLACES_NEW
#define TUTTI_TEST_REPLACES_NEW 1
#endif
