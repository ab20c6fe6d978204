// A file store for the ranks of one run: small values (listen handles,
// addresses, results) written to a shared directory. Writes are atomic
// (temporary file + rename), so a reader never sees half a value; reads poll
// until the file appears or the timeout passes, then name the missing rank.
#pragma once

#include <chrono>
#include <string>

namespace bagua::net_perf {

class FileStore {
 public:
  FileStore(std::string dir, std::chrono::seconds timeout);

  // Writes key atomically.
  void put(const std::string& key, const std::string& value) const;
  // Waits for key (written by rank owner) and returns its contents; throws
  // TimeoutError naming the rank, what was awaited and the file.
  std::string get(const std::string& key, int owner, const std::string& what) const;
  // True if key exists now.
  bool has(const std::string& key) const;
  // When key was written (seconds since the epoch, file mtime); -1 if absent.
  double writtenAt(const std::string& key) const;
  // All `world` ranks meet at barrier `name`; throws naming the absent ranks.
  void barrier(const std::string& name, int rank, int world) const;

  const std::string& dir() const { return dir_; }

 private:
  std::string path(const std::string& key) const;

  std::string dir_;
  std::chrono::seconds timeout_;
};

}  // namespace bagua::net_perf
