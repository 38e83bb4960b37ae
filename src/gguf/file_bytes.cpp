#include "gguf/file_bytes.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <mutex>
#include <system_error>
#include <utility>

#include "core/error.h"
#include "core/thread_ranges.h"

namespace strata::gguf {
namespace {

std::string errno_text(int err) {
  return std::generic_category().message(err);
}

// Closes the descriptor on every path out of FileBytes::map.
struct FdGuard {
  int fd;
  ~FdGuard() {
    if (fd >= 0) ::close(fd);
  }
};

// Opens `path` as a non-empty regular file; returns its length.
size_t open_regular(const std::string& path, FdGuard& guard) {
  guard.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (guard.fd < 0) throw Error(path + ": cannot open: " + errno_text(errno));
  struct stat st {};
  if (::fstat(guard.fd, &st) != 0) throw Error(path + ": cannot stat: " + errno_text(errno));
  if (!S_ISREG(st.st_mode)) throw Error(path + ": not a regular file");
  if (st.st_size <= 0) throw Error(path + ": magic at offset 0: the file is empty");
  return static_cast<size_t>(st.st_size);
}

// Reads bytes [begin, end) of the file into dst + begin; the error text, empty on success.
std::string read_range(int fd, uint8_t* dst, size_t begin, size_t end) {
  for (size_t done = begin; done < end;) {
    const ssize_t n = ::pread(fd, dst + done, end - done, static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      return "read failed at offset " + std::to_string(done) + ": " +
             (n < 0 ? errno_text(errno) : std::string("the file shrank"));
    }
    done += static_cast<size_t>(n);
  }
  return {};
}

}  // namespace

FileBytes FileBytes::read_into_huge_pages(const std::string& path, size_t bytes_per_thread) {
  FdGuard guard{-1};
  const size_t len = open_regular(path, guard);
  FileBytes out;
  out.huge_ = HugePageBuffer(len);
  // Several threads, each its own range: most of a read's time is the kernel zero-filling
  // the fresh huge pages at their first touch, which runs on the faulting thread (a 1B
  // Q4_0 file: most of its load time on one thread).
  std::string error;  // the first range's failure
  std::mutex error_mutex;
  run_in_thread_ranges(static_cast<int64_t>(len), static_cast<int64_t>(bytes_per_thread),
                       int64_t{2} << 20,  // ranges meet on huge-page boundaries
                       [&](int64_t begin, int64_t end) {
                         std::string e =
                             read_range(guard.fd, out.huge_.data(), static_cast<size_t>(begin),
                                        static_cast<size_t>(end));
                         const std::lock_guard<std::mutex> lock(error_mutex);
                         if (error.empty()) error = std::move(e);
                       });
  if (!error.empty()) throw Error(path + ": " + error);
  out.data_ = out.huge_.data();
  out.size_ = len;
  return out;
}

FileBytes FileBytes::map(const std::string& path) {
  FdGuard guard{-1};
  const size_t len = open_regular(path, guard);
  // MAP_PRIVATE + PROT_READ: the weights are used in place and never written through.
  void* addr = ::mmap(nullptr, len, PROT_READ, MAP_PRIVATE, guard.fd, 0);
  if (addr == MAP_FAILED) throw Error(path + ": cannot mmap: " + errno_text(errno));
  FileBytes out;
  out.map_addr_ = addr;
  out.map_len_ = len;
  out.data_ = static_cast<const uint8_t*>(addr);
  out.size_ = len;
  return out;
}

FileBytes FileBytes::own(std::vector<uint8_t> bytes) {
  FileBytes out;
  out.owned_ = std::move(bytes);
  out.data_ = out.owned_.data();
  out.size_ = out.owned_.size();
  return out;
}

FileBytes::FileBytes(FileBytes&& other) noexcept
    : map_addr_(std::exchange(other.map_addr_, nullptr)),
      map_len_(std::exchange(other.map_len_, 0)),
      owned_(std::move(other.owned_)),
      huge_(std::move(other.huge_)),
      data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)) {}

FileBytes& FileBytes::operator=(FileBytes&& other) noexcept {
  if (this != &other) {
    release();
    map_addr_ = std::exchange(other.map_addr_, nullptr);
    map_len_ = std::exchange(other.map_len_, 0);
    owned_ = std::move(other.owned_);
    huge_ = std::move(other.huge_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

FileBytes::~FileBytes() {
  release();
}

void FileBytes::release() noexcept {
  if (map_addr_) ::munmap(map_addr_, map_len_);
  map_addr_ = nullptr;
  map_len_ = 0;
  std::vector<uint8_t>().swap(owned_);
  huge_ = HugePageBuffer();
  data_ = nullptr;
  size_ = 0;
}

}  // namespace strata::gguf
