// Stands in for libnccl.so where the plugin asks which NCCL loaded it: NCCL
// passes its own logger to the plugin's init, and the plugin calls
// ncclGetVersion() of the library that holds that function. The version is
// BAGUA_TEST_NCCL_VERSION (NCCL's code, e.g. 22809 for 2.28.9).
#include <cstdarg>
#include <cstdlib>

extern "C" {

// ncclDebugLogger_t's shape (its first parameter, an enum, is passed as an int).
__attribute__((visibility("default"))) void fakeNcclLogger(int, unsigned long, const char*, int,
                                                           const char*, ...) {}

__attribute__((visibility("default"))) int ncclGetVersion(int* version) {
  const char* text = std::getenv("BAGUA_TEST_NCCL_VERSION");
  *version = text != nullptr ? std::atoi(text) : 0;
  return 0;  // ncclSuccess
}

}  // extern "C"
