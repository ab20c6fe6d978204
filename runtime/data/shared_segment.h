// A block of memory shared by the processes of one node: an anonymous
// memfd, mapped MAP_SHARED. Forked processes (DataLoader workers) inherit the
// mapping; any other process of the node and user maps the same memory by
// opening "/proc/<pid>/fd/<fd>" of a process holding it (attachPath()).
// Why memfd and not shm_open: nothing is left in /dev/shm when the job dies
// (the memory goes when the last process holding it exits), and a container's
// small /dev/shm (Docker's 64 MiB) does not bound it; pages are allocated on
// first touch, so a large capacity costs only what is written.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "posix/fd.h"

namespace bagua {

class SharedSegment {
 public:
  // Creates a zero-filled segment of `bytes`; `name` shows in /proc/<pid>/fd.
  // Throws std::system_error when memfd, ftruncate or mmap fail.
  static SharedSegment create(const std::string& name, size_t bytes);
  // Maps the segment at `path` (another process's attachPath()). Throws
  // InvalidArgument naming the path when it cannot be opened or mapped.
  static SharedSegment attach(const std::string& path);

  SharedSegment(SharedSegment&& other) noexcept;
  SharedSegment& operator=(SharedSegment&& other) noexcept;
  SharedSegment(const SharedSegment&) = delete;
  SharedSegment& operator=(const SharedSegment&) = delete;
  ~SharedSegment();

  uint8_t* data() const { return base_; }
  size_t size() const { return size_; }
  // "/proc/<this pid>/fd/<fd>": valid while this process lives.
  std::string attachPath() const;

 private:
  SharedSegment(posix::Fd fd, uint8_t* base, size_t size)
      : fd_(std::move(fd)), base_(base), size_(size) {}
  void unmap();

  posix::Fd fd_;
  uint8_t* base_ = nullptr;
  size_t size_ = 0;
};

}  // namespace bagua
