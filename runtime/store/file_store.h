// FileStore: a Store in a directory that every rank can see (a local
// directory for ranks of one host, or a shared filesystem; network
// namespaces do not matter). Each key is one file, written to a temporary
// file and renamed into place, so a reader sees the old value or the new one,
// never a torn one. get/wait poll with a short sleep; add() holds an flock on
// a lock file of the directory, which serializes it across processes and
// threads. Relies on POSIX rename and flock (NFS maps flock to fcntl locks).
#pragma once

#include <cstdint>

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>

#include "runtime/store/store.h"

namespace bagua {

// How get() and wait() poll: first after `first`, the interval doubling up
// to `max`. The defaults spare a shared filesystem when many ranks wait; the
// ranks of a benchmark on one host, which arrive within microseconds, poll
// faster.
struct FilePolling {
  std::chrono::microseconds first{1000};
  std::chrono::microseconds max{20000};
};

class FileStore final : public Store {
 public:
  // Uses directory `dir`, creating it (and its parents) if needed.
  explicit FileStore(std::string dir, FilePolling polling = {});

  void set(const std::string& key, const std::vector<uint8_t>& value) override;
  std::vector<uint8_t> get(const std::string& key, std::chrono::milliseconds timeout) override;
  int64_t add(const std::string& key, int64_t delta) override;
  void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) override;

  // Whether `key` is set now (never waits).
  bool has(const std::string& key) const;
  // When `key` was last set (its file's modification time); nullopt if unset.
  std::optional<std::filesystem::file_time_type> writtenAt(const std::string& key) const;

  // The directory this store lives in.
  const std::string& dir() const { return dir_; }

 private:
  std::string pathOf(const std::string& key) const;
  std::optional<std::vector<uint8_t>> tryRead(const std::string& key) const;
  void writeAtomically(const std::string& key, const std::vector<uint8_t>& value);

  std::string dir_;
  FilePolling polling_;
};

}  // namespace bagua
