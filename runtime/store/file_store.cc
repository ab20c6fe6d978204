// FileStore: one file per key, temp file + rename, flock for add().
#include "runtime/store/file_store.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <thread>
#include <utility>

#include "posix/fd.h"
#include "runtime/common/error.h"
#include "runtime/store/store_text.h"

namespace bagua {
namespace {

using posix::Fd;

using Clock = std::chrono::steady_clock;

// Encoded file names stay below NAME_MAX (255) with room for the prefix.
constexpr size_t kMaxFileName = 240;

std::string errnoText() { return std::strerror(errno); }

// Sleeps for the current poll interval (never past `deadline`) and doubles
// it up to `max`. Polling starts fast (a value usually arrives soon after the
// first look) and backs off so that many waiting ranks do not hammer a
// shared filesystem.
void pollSleep(std::chrono::microseconds& interval, std::chrono::microseconds max,
               Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::microseconds>(deadline - Clock::now());
  std::this_thread::sleep_for(std::max(std::chrono::microseconds(0), std::min(interval, left)));
  interval = std::min(interval * 2, max);
}

}  // namespace

FileStore::FileStore(std::string dir, FilePolling polling)
    : dir_(std::move(dir)), polling_(polling) {
  BAGUA_ENFORCE(!dir_.empty(), "FileStore: the directory name is empty");
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  if (ec || !std::filesystem::is_directory(dir_)) {
    BAGUA_THROW(CommError, "FileStore: cannot create directory '" + dir_ +
                               "': " + (ec ? ec.message() : "not a directory"));
  }
}

// Keys may hold any byte; file names get [A-Za-z0-9_-] as is and %XX for
// the rest, behind a "k_" prefix so no key can collide with the lock file or
// a temporary file.
std::string FileStore::pathOf(const std::string& key) const {
  static const char kHex[] = "0123456789ABCDEF";
  std::string name = "k_";
  for (unsigned char c : key) {
    bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                 c == '_' || c == '-';
    if (plain) {
      name += static_cast<char>(c);
    } else {
      name += '%';
      name += kHex[c >> 4];
      name += kHex[c & 15];
    }
  }
  BAGUA_ENFORCE(name.size() <= kMaxFileName, "FileStore: key '" + key.substr(0, 64) +
                                                 "...' is too long (" + std::to_string(key.size()) +
                                                 " bytes; encoded file names must fit in " +
                                                 std::to_string(kMaxFileName) + ")");
  return dir_ + "/" + name;
}

std::optional<std::vector<uint8_t>> FileStore::tryRead(const std::string& key) const {
  std::string path = pathOf(key);
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) {
    if (errno == ENOENT) return std::nullopt;
    BAGUA_THROW(CommError, "FileStore: cannot open '" + path + "': " + errnoText());
  }
  std::vector<uint8_t> value;
  uint8_t buf[4096];
  for (;;) {
    ssize_t n = ::read(fd.get(), buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) BAGUA_THROW(CommError, "FileStore: cannot read '" + path + "': " + errnoText());
    if (n == 0) break;
    value.insert(value.end(), buf, buf + n);
  }
  return value;
}

void FileStore::writeAtomically(const std::string& key, const std::vector<uint8_t>& value) {
  std::string path = pathOf(key);
  std::string tmp = dir_ + "/tmp_XXXXXX";
  Fd fd(::mkostemp(tmp.data(), O_CLOEXEC));
  if (fd.get() < 0) {
    BAGUA_THROW(CommError, "FileStore: cannot create a file in '" + dir_ + "': " + errnoText());
  }
  // mkstemp makes the file 0600; ranks of other users sharing the directory
  // must be able to read it.
  ::fchmod(fd.get(), 0644);
  size_t done = 0;
  while (done < value.size()) {
    ssize_t n = ::write(fd.get(), value.data() + done, value.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      std::string why = errnoText();
      ::unlink(tmp.c_str());
      BAGUA_THROW(CommError, "FileStore: cannot write '" + tmp + "': " + why);
    }
    done += static_cast<size_t>(n);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    std::string why = errnoText();
    ::unlink(tmp.c_str());
    BAGUA_THROW(CommError, "FileStore: cannot rename '" + tmp + "' to '" + path + "': " + why);
  }
}

void FileStore::set(const std::string& key, const std::vector<uint8_t>& value) {
  writeAtomically(key, value);
}

std::vector<uint8_t> FileStore::get(const std::string& key, std::chrono::milliseconds timeout) {
  auto deadline = Clock::now() + timeout;
  auto interval = polling_.first;
  for (;;) {
    if (auto value = tryRead(key)) return std::move(*value);
    if (Clock::now() >= deadline) {
      BAGUA_THROW(TimeoutError, "FileStore '" + dir_ + "': get('" + key + "') timed out after " +
                                    store_text::describeDuration(timeout) +
                                    ": the key was never set");
    }
    pollSleep(interval, polling_.max, deadline);
  }
}

int64_t FileStore::add(const std::string& key, int64_t delta) {
  std::string lockPath = dir_ + "/.lock";
  Fd lock(::open(lockPath.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644));
  if (lock.get() < 0) {
    BAGUA_THROW(CommError, "FileStore: cannot open lock file '" + lockPath + "': " + errnoText());
  }
  // flock belongs to the open file description, so threads of one process
  // (each with its own open()) exclude each other as processes do.
  while (::flock(lock.get(), LOCK_EX) != 0) {
    if (errno != EINTR) {
      BAGUA_THROW(CommError, "FileStore: cannot lock '" + lockPath + "': " + errnoText());
    }
  }
  int64_t current = 0;
  if (auto value = tryRead(key)) {
    auto parsed = store_text::parseCounter(*value);
    BAGUA_ENFORCE(parsed.has_value(),
                  "FileStore: add('" + key + "'): the stored value is not a decimal integer");
    current = *parsed;
  }
  auto sum = store_text::addCounter(current, delta);
  BAGUA_ENFORCE(sum.has_value(), "FileStore: add('" + key + "', " + std::to_string(delta) +
                                     ") overflows the counter " + std::to_string(current));
  writeAtomically(key, store_text::formatCounter(*sum));
  return *sum;
}

void FileStore::wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) {
  auto deadline = Clock::now() + timeout;
  auto interval = polling_.first;
  std::vector<std::string> missing = keys;
  for (;;) {
    std::erase_if(missing, [&](const std::string& k) { return has(k); });
    if (missing.empty()) return;
    if (Clock::now() >= deadline) {
      BAGUA_THROW(TimeoutError, "FileStore '" + dir_ + "': wait timed out after " +
                                    store_text::describeDuration(timeout) + "; " +
                                    std::to_string(missing.size()) + " of " +
                                    std::to_string(keys.size()) +
                                    " keys still missing: " + store_text::describeKeys(missing));
    }
    pollSleep(interval, polling_.max, deadline);
  }
}

bool FileStore::has(const std::string& key) const {
  return ::access(pathOf(key).c_str(), F_OK) == 0;
}

std::optional<std::filesystem::file_time_type> FileStore::writtenAt(const std::string& key) const {
  std::error_code ec;
  auto at = std::filesystem::last_write_time(pathOf(key), ec);
  if (ec) return std::nullopt;
  return at;
}

}  // namespace bagua
