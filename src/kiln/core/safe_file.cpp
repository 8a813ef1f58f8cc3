#include "kiln/core/safe_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace kiln::core {

namespace fs = std::filesystem;

namespace {

std::unexpected<Error> io_failure(const char* what, const fs::path& file, int error) {
  return fail(ErrorCode::io_error, "cannot {} '{}': {}", what, file.string(), std::strerror(error));
}

bool plain_single_link(const struct stat& info) {
  return S_ISREG(info.st_mode) && info.st_nlink == 1;
}

// A new, empty file at `file`, whatever was there (unlinked first when it is not a plain file
// with one link, or not ours to reuse); O_EXCL and O_NOFOLLOW, so nothing a job put there in
// between is written through.
Result<int> create_fresh(const fs::path& file, std::optional<FileOwner> owner) {
  auto ours = [&](const struct stat& info) {
    return plain_single_link(info) && info.st_uid == (owner ? owner->uid : ::geteuid());
  };
  // Reused only when it is a plain file of ours with one link, checked again once open (and
  // opened without O_TRUNC or blocking, so neither a hard link nor a FIFO is touched first).
  struct stat info{};
  if (::lstat(file.c_str(), &info) == 0 && ours(info)) {
    int fd = ::open(file.c_str(), O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd >= 0) {
      if (::fstat(fd, &info) == 0 && ours(info) && ::ftruncate(fd, 0) == 0) {
        ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
        ::fchmod(fd, 0600);  // a file left by an earlier kiln keeps its mode
        return fd;
      }
      ::close(fd);
    }
  }
  if (::unlink(file.c_str()) != 0 && errno != ENOENT) return io_failure("replace", file, errno);
  int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return io_failure("create", file, errno);
  if (owner && ::fchown(fd, owner->uid, owner->gid) != 0) {
    const int error = errno;
    ::close(fd);
    return io_failure("give away", file, error);
  }
  return fd;
}

}  // namespace

std::optional<FileOwner> owner_for_files_in(const fs::path& dir) {
  struct stat info{};
  if (::geteuid() != 0 || ::stat(dir.c_str(), &info) != 0 || info.st_uid == 0) return std::nullopt;
  return FileOwner{info.st_uid, info.st_gid};
}

Status write_fresh_file(const fs::path& file, std::string_view text,
                        std::optional<FileOwner> owner) {
  KILN_TRY(int fd, create_fresh(file, owner));
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int error = errno;
      ::close(fd);
      return io_failure("write", file, error);
    }
    done += static_cast<std::size_t>(n);
  }
  if (::close(fd) != 0) return io_failure("write", file, errno);
  return {};
}

Status ensure_empty_file(const fs::path& file, std::optional<FileOwner> owner) {
  struct stat info{};
  if (::lstat(file.c_str(), &info) == 0 && plain_single_link(info) && info.st_size == 0 &&
      (owner ? info.st_uid == owner->uid : info.st_uid == ::geteuid()))
    return {};
  KILN_TRY(int fd, create_fresh(file, owner));
  if (::close(fd) != 0) return io_failure("create", file, errno);
  return {};
}

Result<std::string> read_plain_file(const fs::path& file) {
  struct stat info{};
  if (::lstat(file.c_str(), &info) != 0) {
    if (errno == ENOENT) return std::string();
    return io_failure("read", file, errno);
  }
  if (!plain_single_link(info))
    return fail(ErrorCode::invalid_input,
                "'{}' was replaced by a link or a special file: it is not read", file.string());
  if (info.st_size == 0) return std::string();
  const int fd = ::open(file.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return io_failure("read", file, errno);
  struct stat opened{};
  if (::fstat(fd, &opened) != 0 || !plain_single_link(opened)) {
    ::close(fd);
    return fail(ErrorCode::invalid_input,
                "'{}' was replaced by a link or a special file: it is not read", file.string());
  }
  std::string text;
  char buffer[65536];
  while (true) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int error = errno;
      ::close(fd);
      return io_failure("read", file, error);
    }
    if (n == 0) break;
    text.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return text;
}

}  // namespace kiln::core
