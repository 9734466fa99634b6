// <immintrin.h> for the host loops compiled for AVX2 and AVX-512 through the target attribute
// (core/half.cpp, model/row_loops.hpp), with GCC 12's false "may be used uninitialized" on the
// AVX-512 intrinsics' placeholder operands (_mm512_undefined_*, GCC bug 105593) silenced: the
// warning's location is the header's line where they are inlined, so it is silenced for the
// header's text only.
#pragma once

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop
