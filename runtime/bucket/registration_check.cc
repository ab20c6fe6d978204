// Registration consistency through the store.
#include "runtime/bucket/registration_check.h"

#include <cstring>

#include "runtime/common/error.h"

namespace bagua {
namespace {

struct Entry {
  uint64_t numel;
  uint32_t dtype;
  uint32_t reserved;
};

std::vector<uint8_t> encode(const std::vector<TensorSpec>& tensors) {
  std::vector<uint8_t> out(tensors.size() * sizeof(Entry));
  for (size_t i = 0; i < tensors.size(); ++i) {
    Entry e{tensors[i].numel, static_cast<uint32_t>(tensors[i].dtype), 0};
    std::memcpy(out.data() + i * sizeof(Entry), &e, sizeof(Entry));
  }
  return out;
}

std::string describe(const Entry& e) {
  return std::to_string(e.numel) + " " +
         (e.dtype <= 2 ? dtypeName(static_cast<DType>(e.dtype)) : "unknown-dtype");
}

}  // namespace

void checkRegistrationConsistent(Store& store, const std::string& prefix, int rank, int size,
                                 const std::vector<TensorSpec>& tensors,
                                 std::chrono::milliseconds timeout) {
  std::string base = prefix + "/registration/";
  std::vector<uint8_t> mine = encode(tensors);
  store.set(base + std::to_string(rank), mine);
  std::vector<std::string> keys;
  for (int r = 0; r < size; ++r) keys.push_back(base + std::to_string(r));
  try {
    store.wait(keys, timeout);
  } catch (const TimeoutError& e) {
    BAGUA_THROW(TimeoutError, std::string("tensor registration: not every rank registered its "
                                          "tensors: ") +
                                  e.what());
  }
  size_t count = tensors.size();
  for (int r = 0; r < size; ++r) {
    if (r == rank) continue;
    std::vector<uint8_t> theirs = store.get(keys[static_cast<size_t>(r)], timeout);
    size_t theirCount = theirs.size() / sizeof(Entry);
    if (theirCount != count) {
      BAGUA_THROW(InvalidArgument,
                  "tensor registration differs between ranks: rank " + std::to_string(r) +
                      " registered " + std::to_string(theirCount) + " tensors, rank " +
                      std::to_string(rank) + " registered " + std::to_string(count));
    }
    for (size_t i = 0; i < count; ++i) {
      Entry a;
      Entry b;
      std::memcpy(&a, mine.data() + i * sizeof(Entry), sizeof(Entry));
      std::memcpy(&b, theirs.data() + i * sizeof(Entry), sizeof(Entry));
      if (a.numel != b.numel || a.dtype != b.dtype) {
        BAGUA_THROW(InvalidArgument, "tensor registration differs between ranks: tensor " +
                                         std::to_string(i) + " (" + tensors[i].name + "): rank " +
                                         std::to_string(rank) + " has " + describe(a) + ", rank " +
                                         std::to_string(r) + " has " + describe(b));
      }
    }
  }
}

}  // namespace bagua
