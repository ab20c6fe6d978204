// main() of the in-process plugin suites: ignores SIGPIPE (a peer closing
// mid-send must surface as an error code, not kill the test), installs the
// capturing logger and initialises the plugin once.
#include <gtest/gtest.h>

#include <csignal>
#include <cstdlib>

#include "net_plugin/api/api.h"
#include "tests/net_plugin/support/harness.h"

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  std::signal(SIGPIPE, SIG_IGN);
  if (bagua::net::api::init(bagua::net::testing::captureLogger) != ncclSuccess) {
    fprintf(stderr, "plugin init failed (no usable interface? set NCCL_SOCKET_IFNAME=lo)\n");
    // Suites for optional address families (IPv6) skip where the host has none.
    return std::getenv("BAGUA_TEST_DEVICE_OPTIONAL") != nullptr ? 77 : 1;
  }
  return RUN_ALL_TESTS();
}
