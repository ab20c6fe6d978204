// SharedSegment: memfd_create + ftruncate + mmap, or open + fstat + mmap of
// a published /proc path.
#include "runtime/data/shared_segment.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <system_error>
#include <utility>

#include "runtime/common/error.h"

namespace bagua {
namespace {

uint8_t* mapShared(int fd, size_t bytes) {
  void* base = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  return base == MAP_FAILED ? nullptr : static_cast<uint8_t*>(base);
}

}  // namespace

SharedSegment SharedSegment::create(const std::string& name, size_t bytes) {
  BAGUA_ENFORCE(bytes > 0, "a shared segment needs a size above 0 bytes");
  posix::Fd fd(::memfd_create(name.c_str(), MFD_CLOEXEC));
  if (!fd.valid()) throw std::system_error(errno, std::generic_category(), "memfd_create");
  if (::ftruncate(fd.get(), static_cast<off_t>(bytes)) != 0) {
    throw std::system_error(errno, std::generic_category(),
                            "ftruncate of a " + std::to_string(bytes) + "-byte memfd");
  }
  uint8_t* base = mapShared(fd.get(), bytes);
  if (base == nullptr) {
    throw std::system_error(errno, std::generic_category(),
                            "mmap of " + std::to_string(bytes) + " shared bytes");
  }
  return SharedSegment(std::move(fd), base, bytes);
}

SharedSegment SharedSegment::attach(const std::string& path) {
  posix::Fd fd(::open(path.c_str(), O_RDWR | O_CLOEXEC));
  if (!fd.valid()) {
    BAGUA_THROW(InvalidArgument, "cannot open the shared cache segment " + path + ": " +
                                     std::strerror(errno) +
                                     " (its creating process must be alive, on this node, and "
                                     "run as the same user)");
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || st.st_size <= 0) {
    BAGUA_THROW(InvalidArgument, "the shared cache segment " + path + " is empty or unreadable");
  }
  size_t bytes = static_cast<size_t>(st.st_size);
  uint8_t* base = mapShared(fd.get(), bytes);
  if (base == nullptr) {
    BAGUA_THROW(InvalidArgument,
                "cannot map the shared cache segment " + path + ": " + std::strerror(errno));
  }
  return SharedSegment(std::move(fd), base, bytes);
}

SharedSegment::SharedSegment(SharedSegment&& other) noexcept
    : fd_(std::move(other.fd_)),
      base_(std::exchange(other.base_, nullptr)),
      size_(std::exchange(other.size_, 0)) {}

SharedSegment& SharedSegment::operator=(SharedSegment&& other) noexcept {
  if (this != &other) {
    unmap();
    fd_ = std::move(other.fd_);
    base_ = std::exchange(other.base_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

SharedSegment::~SharedSegment() { unmap(); }

void SharedSegment::unmap() {
  if (base_ != nullptr) ::munmap(base_, size_);
  base_ = nullptr;
  size_ = 0;
}

std::string SharedSegment::attachPath() const {
  return "/proc/" + std::to_string(::getpid()) + "/fd/" + std::to_string(fd_.get());
}

}  // namespace bagua
