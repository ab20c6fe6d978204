// rendezvousInfoFromEnv / rendezvousOptionsFromEnv: torchrun's variables
// parsed strictly, every error naming the variable and what was wrong.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <optional>

#include "runtime/common/error.h"
#include "runtime/store/rendezvous.h"

namespace bagua {
namespace {

const char* const kVariables[] = {"MASTER_ADDR",
                                  "MASTER_PORT",
                                  "RANK",
                                  "WORLD_SIZE",
                                  "LOCAL_RANK",
                                  "BAGUA_STORE_DIR",
                                  "BAGUA_RENDEZVOUS_TIMEOUT_S",
                                  "BAGUA_RENDEZVOUS_TIMEOUT_MS"};

// Sets exactly the given variables (of kVariables) for one test and restores
// the process environment afterwards.
class EnvTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* name : kVariables) {
      const char* v = std::getenv(name);
      if (v) saved_[name] = v;
      ::unsetenv(name);
    }
  }
  void TearDown() override {
    for (const char* name : kVariables) ::unsetenv(name);
    for (const auto& [name, value] : saved_) ::setenv(name.c_str(), value.c_str(), 1);
  }
  void set(const std::map<std::string, std::string>& vars) {
    for (const auto& [name, value] : vars) ::setenv(name.c_str(), value.c_str(), 1);
  }
  void setTorchrun() {
    set({{"MASTER_ADDR", "node0"},
         {"MASTER_PORT", "29500"},
         {"RANK", "3"},
         {"WORLD_SIZE", "8"},
         {"LOCAL_RANK", "1"}});
  }
  // The message of the InvalidArgument rendezvousInfoFromEnv throws, or "".
  std::string infoError() {
    try {
      rendezvousInfoFromEnv();
    } catch (const InvalidArgument& e) {
      return e.what();
    }
    return "";
  }

 private:
  std::map<std::string, std::string> saved_;
};

TEST_F(EnvTest, ReadsTorchrunVariables) {
  setTorchrun();
  RendezvousInfo info = rendezvousInfoFromEnv();
  EXPECT_EQ(info.rank, 3);
  EXPECT_EQ(info.worldSize, 8);
  EXPECT_EQ(info.localRank, 1);
  EXPECT_EQ(info.masterAddr, "node0");
  EXPECT_EQ(info.masterPort, 29500);
}

TEST_F(EnvTest, LocalRankDefaultsToRank) {
  setTorchrun();
  ::unsetenv("LOCAL_RANK");
  EXPECT_EQ(rendezvousInfoFromEnv().localRank, 3);
}

TEST_F(EnvTest, EachMissingVariableIsNamed) {
  for (const char* name : {"MASTER_ADDR", "MASTER_PORT", "RANK", "WORLD_SIZE"}) {
    setTorchrun();
    ::unsetenv(name);
    std::string what = infoError();
    EXPECT_NE(what.find(std::string("environment variable ") + name + " is not set"),
              std::string::npos)
        << name << ": " << what;
  }
}

TEST_F(EnvTest, MalformedAndOutOfRangeValuesAreNamed) {
  struct Case {
    const char* name;
    const char* value;
    const char* expected;
  };
  const Case cases[] = {
      {"RANK", "abc", "RANK='abc' is not an integer"},
      {"RANK", "1x", "RANK='1x' is not an integer"},
      {"RANK", "", "RANK='' is not an integer"},
      {"RANK", " 1", "RANK=' 1' is not an integer"},
      {"RANK", "8", "RANK=8 is out of range: must be in 0..7 (WORLD_SIZE=8)"},
      {"RANK", "-1", "RANK=-1 is out of range"},
      {"WORLD_SIZE", "0", "WORLD_SIZE=0 is out of range"},
      {"WORLD_SIZE", "99999999999999999999", "WORLD_SIZE='99999999999999999999' is not an integer"},
      {"LOCAL_RANK", "9", "LOCAL_RANK=9 is out of range"},
      {"MASTER_PORT", "70000", "MASTER_PORT=70000 is out of range: must be in 1..65535"},
      {"MASTER_PORT", "0", "MASTER_PORT=0 is out of range"},
      {"MASTER_ADDR", "", "MASTER_ADDR is empty"},
  };
  for (const Case& c : cases) {
    setTorchrun();
    ::setenv(c.name, c.value, 1);
    std::string what = infoError();
    EXPECT_NE(what.find(c.expected), std::string::npos)
        << c.name << "='" << c.value << "': " << what;
  }
}

TEST_F(EnvTest, StoreDirMakesMasterVariablesOptional) {
  set({{"RANK", "0"},
       {"WORLD_SIZE", "2"},
       {"BAGUA_STORE_DIR", "/tmp/x"},
       {"BAGUA_RENDEZVOUS_TIMEOUT_S", "1.5"}});
  RendezvousInfo info = rendezvousInfoFromEnv();
  EXPECT_EQ(info.masterPort, 0);
  EXPECT_EQ(info.masterAddr, "");
  RendezvousOptions options = rendezvousOptionsFromEnv();
  EXPECT_EQ(options.storeDir, "/tmp/x");
  EXPECT_EQ(options.timeout, std::chrono::milliseconds(1500));
}

TEST_F(EnvTest, BadOptionsAreNamed) {
  for (const char* value : {"soon", "0", "-1", "1e12", ""}) {
    set({{"BAGUA_RENDEZVOUS_TIMEOUT_S", value}});
    try {
      rendezvousOptionsFromEnv();
      FAIL() << "accepted a timeout of '" << value << "'";
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find("BAGUA_RENDEZVOUS_TIMEOUT_S="), std::string::npos)
          << e.what();
    }
  }
  ::unsetenv("BAGUA_RENDEZVOUS_TIMEOUT_S");
  EXPECT_EQ(rendezvousOptionsFromEnv().timeout, std::chrono::seconds(30));
}

// Timeouts are seconds everywhere: the old millisecond knob is an error that
// names its replacement, not a value silently ignored.
TEST_F(EnvTest, TheMillisecondKnobNamesItsReplacement) {
  set({{"BAGUA_RENDEZVOUS_TIMEOUT_MS", "1500"}});
  try {
    rendezvousOptionsFromEnv();
    FAIL() << "accepted BAGUA_RENDEZVOUS_TIMEOUT_MS";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("BAGUA_RENDEZVOUS_TIMEOUT_S"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace bagua
