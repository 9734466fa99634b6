// kpmap's errors and exit codes (DESIGN.md §3): 0 success, 1 runtime failure, 2 bad input.
#pragma once

#include <mpi.h>

#include <stdexcept>
#include <string>

namespace kpmap {

enum ExitCode : int { exit_success = 0, exit_runtime = 1, exit_bad_input = 2 };

class Error : public std::runtime_error {
 public:
  Error(const std::string& message, int exit_code)
      : std::runtime_error(message), exit_code_(exit_code) {}
  int exit_code() const noexcept { return exit_code_; }

 private:
  int exit_code_;
};

// Bad input: deck, command line, data file. Exit code 2.
class InputError : public Error {
 public:
  explicit InputError(const std::string& message) : Error(message, exit_bad_input) {}
};

// A collective's shape rule is violated (a programming error in the caller). Exit code 1.
class ShapeError : public Error {
 public:
  explicit ShapeError(const std::string& message) : Error(message, exit_runtime) {}
};

// Anything else that stops a run. Exit code 1.
class RuntimeError : public Error {
 public:
  explicit RuntimeError(const std::string& message) : Error(message, exit_runtime) {}
};

// A runtime failure thrown at the same point on every rank, from values every rank agrees on
// (e.g. bounds agreed over the mesh): kpmap::run lets rank 0 print it once and every rank return
// exit code 1, with no MPI_Abort.
class AgreedError : public RuntimeError {
 public:
  explicit AgreedError(const std::string& message) : RuntimeError(message) {}
};

// Throws RuntimeError naming the call and MPI's own error string unless rc == MPI_SUCCESS.
void check_mpi(int rc, const char* call);

// Agrees on an error over `comm` so that no error stays rank-local: every rank passes its own
// exit code (0 when fine) and message; the lowest failing rank prints its message once to
// stderr, and every rank gets the largest code. Collective over `comm`.
int agree_on_exit(MPI_Comm comm, int exit_code, const std::string& message);

}  // namespace kpmap
