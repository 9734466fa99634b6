#include "kpmap/collectives/mpi_types.hpp"

#include <climits>
#include <cmath>
#include <type_traits>

#include "kpmap/core/error.hpp"

namespace kpmap {

std::string to_string(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum: return "sum";
    case ReduceOp::max: return "max";
    case ReduceOp::min: return "min";
  }
  return "?";
}

namespace {

// User ops. MPI calls them with `inout[i] = in[i] op inout[i]`.
template <class H>
void sum_op(void* in, void* inout, int* len, MPI_Datatype*) {
  const H* a = static_cast<const H*>(in);
  H* b = static_cast<H*>(inout);
  for (int i = 0; i < *len; ++i) b[i] = H(static_cast<float>(a[i]) + static_cast<float>(b[i]));
}

// bf16: the same sum, 8, 16 or 32 elements at a time on x86-64 (detail::add_bf16, bitwise the loop above).
template <>
void sum_op<bf16>(void* in, void* inout, int* len, MPI_Datatype*) {
  detail::add_bf16(static_cast<const bf16*>(in), static_cast<bf16*>(inout), *len);
}

// The value an element compares as: 16-bit types in float (exact), native floats as they are.
template <class E>
auto compared(const E& x) {
  if constexpr (std::is_floating_point_v<E>) {
    return x;
  } else {
    return static_cast<float>(x);
  }
}

// max and min for the floating types, kpmap's rule (docs/collectives.md): NaN wins whichever side it arrives on, and -0
// orders below +0 (IEEE 754-2019 maximum/minimum), so the result does not depend on the
// reduction tree. The winning element is kept bit for bit.
template <class E>
void max_op(void* in, void* inout, int* len, MPI_Datatype*) {
  const E* a = static_cast<const E*>(in);
  E* b = static_cast<E*>(inout);
  for (int i = 0; i < *len; ++i) {
    const auto x = compared(a[i]), y = compared(b[i]);
    if (x != x || x > y || (x == y && std::signbit(y) && !std::signbit(x))) b[i] = a[i];
  }
}

template <class E>
void min_op(void* in, void* inout, int* len, MPI_Datatype*) {
  const E* a = static_cast<const E*>(in);
  E* b = static_cast<E*>(inout);
  for (int i = 0; i < *len; ++i) {
    const auto x = compared(a[i]), y = compared(b[i]);
    if (x != x || x < y || (x == y && std::signbit(x) && !std::signbit(y))) b[i] = a[i];
  }
}

// A type's user-defined handles. For float and double only ops[max] and ops[min] are created:
// they keep the predefined MPI datatype and MPI_SUM.
struct Handles {
  MPI_Datatype type = MPI_DATATYPE_NULL;
  MPI_Op ops[3] = {MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL};  // indexed by ReduceOp
};

// Handles of the 16-bit types and the NaN-propagating max/min of float and double. Created
// together on first use; freed by the delete callback of an attribute on MPI_COMM_SELF, which
// MPI_Finalize runs first of all, while MPI still works (MPI-3.1 §8.7.1): nothing leaks and
// nothing is freed after MPI is gone.
struct HalfRegistry {
  Handles bf16, fp16, fp32, fp64;
  bool freed = false;
};

HalfRegistry& registry_storage() {
  static HalfRegistry registry;
  return registry;
}

int free_handles(Handles& h) {
  int rc = MPI_SUCCESS;
  for (MPI_Op& op : h.ops) {
    if (op != MPI_OP_NULL) {
      const int r = MPI_Op_free(&op);
      if (rc == MPI_SUCCESS) rc = r;
    }
  }
  if (h.type != MPI_DATATYPE_NULL) {
    const int r = MPI_Type_free(&h.type);
    if (rc == MPI_SUCCESS) rc = r;
  }
  return rc;
}

int free_at_finalize(MPI_Comm, int keyval, void*, void*) {
  HalfRegistry& r = registry_storage();
  r.freed = true;
  int rc = MPI_SUCCESS;
  for (Handles* h : {&r.bf16, &r.fp16, &r.fp32, &r.fp64}) {
    const int rh = free_handles(*h);
    if (rc == MPI_SUCCESS) rc = rh;
  }
  const int rc_keyval = MPI_Comm_free_keyval(&keyval);
  return rc != MPI_SUCCESS ? rc : rc_keyval;
}

template <class E>
void create_extrema(Handles& h) {
  const int commutative = 1;
  check_mpi(MPI_Op_create(&max_op<E>, commutative, &h.ops[static_cast<int>(ReduceOp::max)]),
            "MPI_Op_create");
  check_mpi(MPI_Op_create(&min_op<E>, commutative, &h.ops[static_cast<int>(ReduceOp::min)]),
            "MPI_Op_create");
}

template <class H>
Handles create_half_handles(const char* name) {
  Handles h;
  check_mpi(MPI_Type_contiguous(1, MPI_UINT16_T, &h.type), "MPI_Type_contiguous");
  check_mpi(MPI_Type_commit(&h.type), "MPI_Type_commit");
  check_mpi(MPI_Type_set_name(h.type, name), "MPI_Type_set_name");
  const int commutative = 1;
  check_mpi(MPI_Op_create(&sum_op<H>, commutative, &h.ops[static_cast<int>(ReduceOp::sum)]),
            "MPI_Op_create");
  create_extrema<H>(h);
  return h;
}

HalfRegistry& create_registry() {
  HalfRegistry& r = registry_storage();
  r.bf16 = create_half_handles<bf16>("kpmap_bf16");
  r.fp16 = create_half_handles<fp16>("kpmap_fp16");
  create_extrema<float>(r.fp32);
  create_extrema<double>(r.fp64);
  int keyval = MPI_KEYVAL_INVALID;
  check_mpi(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, &free_at_finalize, &keyval, nullptr),
            "MPI_Comm_create_keyval");
  check_mpi(MPI_Comm_set_attr(MPI_COMM_SELF, keyval, nullptr), "MPI_Comm_set_attr");
  return r;
}

// All handles, created on the first call (thread-safe: a function-local static).
const HalfRegistry& registry(const char* what) {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (!initialized || finalized || registry_storage().freed) {
    throw RuntimeError(std::string(what) +
                       " needs MPI: called before MPI_Init or after MPI_Finalize");
  }
  static const HalfRegistry& created = create_registry();
  return created;
}

MPI_Op op_of(const Handles& h, ReduceOp op) {
  const int i = static_cast<int>(op);
  return i >= 0 && i < 3 ? h.ops[i] : MPI_OP_NULL;
}

const Handles& handles(detail::UserType which, const char* what) {
  const HalfRegistry& r = registry(what);
  switch (which) {
    case detail::UserType::fp64: return r.fp64;
    case detail::UserType::fp32: return r.fp32;
    case detail::UserType::bf16: return r.bf16;
    case detail::UserType::fp16: return r.fp16;
  }
  return r.fp64;
}

std::int64_t chunk_elements = INT_MAX;

}  // namespace

namespace detail {

MPI_Datatype user_datatype(UserType which, const char* what) { return handles(which, what).type; }

MPI_Op user_op(UserType which, ReduceOp op, const char* what) {
  return op_of(handles(which, what), op);
}

std::int64_t chunk_limit() { return chunk_elements; }

void set_chunk_limit(std::int64_t elements) {
  chunk_elements = elements >= 1 && elements < INT_MAX ? elements : INT_MAX;
}

}  // namespace detail

}  // namespace kpmap
