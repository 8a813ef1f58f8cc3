// kiln-step-helper: starts a container job's steps without `podman exec` (docs/containers.md,
// "Fast steps"). One static binary, two modes:
//
//   kiln-step-helper serve SOCKET
//     The job container's entry point (under --init). Listens on the unix socket SOCKET, in a
//     directory bind-mounted at the same path on the host. For each connection it forks a
//     handler that receives the request and starts the command.
//
//   kiln-step-helper run SOCKET DIR -- ARGV...
//     On the host, spawned by kiln's step runner in place of `podman exec`. Sends its standard
//     output and error (SCM_RIGHTS), DIR, ARGV and its whole environment to the server, which
//     starts ARGV in the container with those descriptors: the step's output flows straight into
//     the step runner's pipe. It exits as the command exits (same code, or the same signal).
//     SIGTERM, SIGINT and SIGHUP are forwarded to the command's process group; when this client
//     dies (SIGKILL) the server kills the command's group.
//
// The command runs in a new session (its own process group, as the step runner expects on the
// host), with the server's environment (the container's) overridden by the client's, standard
// input /dev/null, ARGV[0] looked up in the resulting PATH.
//
// Wire format, client → server: one byte carrying the two descriptors, then a 4-byte length
// and a body of NUL-terminated strings: DIR, then "argc", ARGV..., then ENV... (to the end).
// Then, at any time, one byte per signal to forward. Server → client: 4 bytes, the wait status.
// A connection whose first byte is 'q' and carries no descriptors asks the server to exit (kiln
// at the end of the job): the container's init then exits, and the engine removes the
// container without the kill and wait of `rm -f` (docs/performance.md, "Container jobs: start").

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <vector>

extern char** environ;

namespace {

bool write_all(int fd, const void* data, size_t size) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    ssize_t n = write(fd, p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

bool read_all(int fd, void* data, size_t size) {
  char* p = static_cast<char*>(data);
  while (size > 0) {
    ssize_t n = read(fd, p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

bool make_address(const char* path, sockaddr_un& address) {
  memset(&address, 0, sizeof address);
  address.sun_family = AF_UNIX;
  if (strlen(path) >= sizeof address.sun_path) return false;
  strcpy(address.sun_path, path);
  return true;
}

// ---- server ---------------------------------------------------------------------------------

std::string lookup(const std::string& program, const std::vector<std::string>& env) {
  if (program.find('/') != std::string::npos) return program;
  std::string path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
  for (const auto& entry : env)
    if (entry.rfind("PATH=", 0) == 0) path = entry.substr(5);
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find(':', start);
    if (end == std::string::npos) end = path.size();
    std::string dir = path.substr(start, end - start);
    if (dir.empty()) dir = ".";
    std::string candidate = dir + "/" + program;
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
    start = end + 1;
  }
  return program;
}

void handle(int connection) {
  // The descriptors first.
  char byte = 0;
  iovec io{&byte, 1};
  char control[CMSG_SPACE(2 * sizeof(int))];
  msghdr message{};
  message.msg_iov = &io;
  message.msg_iovlen = 1;
  message.msg_control = control;
  message.msg_controllen = sizeof control;
  if (recvmsg(connection, &message, MSG_CMSG_CLOEXEC) != 1) _exit(1);
  int fds[2] = {-1, -1};
  for (cmsghdr* c = CMSG_FIRSTHDR(&message); c != nullptr; c = CMSG_NXTHDR(&message, c))
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
      memcpy(fds, CMSG_DATA(c), sizeof fds);
  if (fds[0] < 0 && fds[1] < 0 && byte == 'q') {
    kill(getppid(), SIGTERM);
    _exit(0);
  }
  if (fds[0] < 0 || fds[1] < 0) _exit(1);
  uint32_t length = 0;
  if (!read_all(connection, &length, sizeof length) || length > (64u << 20)) _exit(1);
  std::string body(length, '\0');
  if (!read_all(connection, body.data(), length)) _exit(1);
  std::vector<std::string> fields;
  size_t start = 0;
  while (start < body.size()) {
    size_t end = body.find('\0', start);
    if (end == std::string::npos) end = body.size();
    fields.push_back(body.substr(start, end - start));
    start = end + 1;
  }
  if (fields.size() < 2) _exit(1);
  std::string dir = fields[0];
  size_t argc = strtoul(fields[1].c_str(), nullptr, 10);
  if (argc == 0 || 2 + argc > fields.size()) _exit(1);
  std::vector<std::string> argv(fields.begin() + 2, fields.begin() + 2 + static_cast<long>(argc));
  // The container's environment, overridden by the step's.
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) env.emplace_back(*e);
  for (size_t i = 2 + argc; i < fields.size(); ++i) {
    const std::string& entry = fields[i];
    std::string name = entry.substr(0, entry.find('='));
    bool replaced = false;
    for (auto& existing : env)
      if (existing.compare(0, name.size() + 1, name + "=") == 0) {
        existing = entry;
        replaced = true;
      }
    if (!replaced) env.push_back(entry);
  }

  pid_t child = fork();
  if (child < 0) _exit(1);
  if (child == 0) {
    setsid();
    signal(SIGPIPE, SIG_DFL);
    int null = open("/dev/null", O_RDONLY);
    dup2(null, 0);
    dup2(fds[0], 1);
    dup2(fds[1], 2);
    if (!dir.empty() && chdir(dir.c_str()) != 0) {
      dprintf(2, "kiln-step-helper: cannot change to directory '%s': %s\n", dir.c_str(),
              strerror(errno));
      _exit(127);
    }
    std::vector<char*> args, envp;
    for (auto& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    for (auto& e : env) envp.push_back(e.data());
    envp.push_back(nullptr);
    std::string program = lookup(argv[0], env);
    execve(program.c_str(), args.data(), envp.data());
    dprintf(2, "kiln-step-helper: cannot run '%s': %s\n", argv[0].c_str(), strerror(errno));
    _exit(127);
  }
  close(fds[0]);
  close(fds[1]);
  // Forward signals until the command exits; the client's end closing means it was killed. A
  // pidfd wakes the loop when the command exits (Linux 5.3); without one, it looks every 20 ms.
  int pidfd = static_cast<int>(syscall(SYS_pidfd_open, child, 0));
  int status = 0;
  while (true) {
    pid_t done = waitpid(child, &status, WNOHANG);
    if (done == child) break;
    pollfd p[2] = {{connection, POLLIN, 0}, {pidfd, POLLIN, 0}};
    int ready = poll(p, pidfd >= 0 ? 2 : 1, pidfd >= 0 ? -1 : 20);
    if (ready > 0 && (p[0].revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
      unsigned char signal_number = 0;
      ssize_t n = read(connection, &signal_number, 1);
      if (n == 1) {
        kill(-child, signal_number);
      } else if (n == 0 || (n < 0 && errno != EINTR)) {
        kill(-child, SIGKILL);
        waitpid(child, &status, 0);
        _exit(0);
      }
    }
  }
  uint32_t wire = static_cast<uint32_t>(status);
  write_all(connection, &wire, sizeof wire);
  _exit(0);
}

int serve(const char* path) {
  sockaddr_un address;
  if (!make_address(path, address)) {
    fprintf(stderr, "kiln-step-helper: socket path too long: %s\n", path);
    return 2;
  }
  unlink(path);
  int listener = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  std::string temporary = std::string(path) + ".new";
  sockaddr_un staging;
  if (listener < 0 || !make_address(temporary.c_str(), staging)) return 2;
  unlink(temporary.c_str());
  // Bound under a temporary name and renamed: the client never sees a socket not yet listening.
  if (bind(listener, reinterpret_cast<sockaddr*>(&staging), sizeof staging) != 0 ||
      listen(listener, 64) != 0 || rename(temporary.c_str(), path) != 0) {
    fprintf(stderr, "kiln-step-helper: cannot listen on %s: %s\n", path, strerror(errno));
    return 2;
  }
  signal(SIGCHLD, SIG_IGN);  // handlers are reaped by the kernel
  signal(SIGPIPE, SIG_IGN);
  // A quit request (above); a handler of its own, since as PID 1 (no --init) the default
  // action would ignore it.
  struct sigaction quit{};
  quit.sa_handler = [](int) { _exit(0); };
  sigemptyset(&quit.sa_mask);
  sigaction(SIGTERM, &quit, nullptr);
  while (true) {
    int connection = accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
    if (connection < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      return 1;
    }
    pid_t handler = fork();
    if (handler == 0) {
      signal(SIGCHLD, SIG_DFL);
      close(listener);
      handle(connection);
    }
    close(connection);
  }
}

// ---- client ---------------------------------------------------------------------------------

int g_connection = -1;

void forward(int signal_number) {
  unsigned char byte = static_cast<unsigned char>(signal_number);
  ssize_t ignored = write(g_connection, &byte, 1);
  (void)ignored;
}

int run(const char* path, const char* dir, int argc, char** argv) {
  sockaddr_un address;
  if (!make_address(path, address)) return 125;
  g_connection = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (g_connection < 0 ||
      connect(g_connection, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    fprintf(stderr, "kiln-step-helper: cannot reach the job container's helper at %s: %s\n", path,
            strerror(errno));
    return 125;
  }
  int fds[2] = {1, 2};
  char byte = 0;
  iovec io{&byte, 1};
  char control[CMSG_SPACE(sizeof fds)];
  memset(control, 0, sizeof control);
  msghdr message{};
  message.msg_iov = &io;
  message.msg_iovlen = 1;
  message.msg_control = control;
  message.msg_controllen = sizeof control;
  cmsghdr* c = CMSG_FIRSTHDR(&message);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof fds);
  memcpy(CMSG_DATA(c), fds, sizeof fds);
  if (sendmsg(g_connection, &message, 0) != 1) return 125;
  std::string body = std::string(dir) + '\0' + std::to_string(argc) + '\0';
  for (int i = 0; i < argc; ++i) body += std::string(argv[i]) + '\0';
  for (char** e = environ; *e != nullptr; ++e) body += std::string(*e) + '\0';
  uint32_t length = static_cast<uint32_t>(body.size());
  if (!write_all(g_connection, &length, sizeof length) ||
      !write_all(g_connection, body.data(), body.size()))
    return 125;
  // Our copies of the output descriptors are not needed any more: the command holds its own.
  int null = open("/dev/null", O_WRONLY);
  dup2(null, 1);
  dup2(null, 2);
  struct sigaction action{};
  action.sa_handler = forward;
  sigemptyset(&action.sa_mask);
  for (int s : {SIGTERM, SIGINT, SIGHUP, SIGQUIT}) sigaction(s, &action, nullptr);
  uint32_t status = 0;
  if (!read_all(g_connection, &status, sizeof status)) return 125;
  int wait_status = static_cast<int>(status);
  if (WIFSIGNALED(wait_status)) {
    signal(WTERMSIG(wait_status), SIG_DFL);
    raise(WTERMSIG(wait_status));
    return 128 + WTERMSIG(wait_status);
  }
  return WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : 125;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 3 && strcmp(argv[1], "serve") == 0) return serve(argv[2]);
  if (argc >= 6 && strcmp(argv[1], "run") == 0 && strcmp(argv[4], "--") == 0)
    return run(argv[2], argv[3], argc - 5, argv + 5);
  fprintf(stderr,
          "usage: kiln-step-helper serve SOCKET\n"
          "       kiln-step-helper run SOCKET DIR -- ARGV...\n");
  return 2;
}
