// Role: guest sample "exec_programs": processes that exec: a `#!` script
// with an interpreter argument (binfmt_script's argv), the sample itself
// again (by its argv[0], an absolute path in the tests; its output through a pipe, a descriptor kept
// across the exec and a close-on-exec one closed by it), posix_spawn with a
// dup2 file action, system() and popen() (/bin/sh), and the errors an exec
// gives back to its caller: a missing file (ENOENT), a file that is neither
// ELF nor a script (ENOEXEC), a directory (EACCES).
// Invariants: deterministic output only; every file it makes is in {tmp}.
// Directives (see samples/README.md):
// args: {tmp}
// archs: x86_64 i386 arm aarch64 riscv64 mips mipsel
// exit: 0
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

static int child_mode(int argc, char** argv) {
  // argv: self, tmp, "child", kept-fd, cloexec-fd
  const int kept = atoi(argv[3]), closed = atoi(argv[4]);
  printf("exec'd image: argc %d, kept fd open %s, close-on-exec fd closed %s\n", argc,
         fcntl(kept, F_GETFD) >= 0 ? "yes" : "no", fcntl(closed, F_GETFD) < 0 && errno == EBADF ? "yes" : "no");
  return 6;
}

static void describe(const char* what, int status) {
  if (WIFEXITED(status)) printf("%s: exited %d\n", what, WEXITSTATUS(status));
  else printf("%s: status %#x\n", what, status);
}

static void write_file(const char* path, const char* text, mode_t mode) {
  const int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);
  if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text)) exit(30);
  close(fd);
}

static void run_script(const char* tmp) {
  char script[512];
  snprintf(script, sizeof script, "%s/script.sh", tmp);
  write_file(script, "#!/bin/sh -e\necho \"script: $# arguments: $1 $2\"\nexit 4\n", 0755);
  const pid_t child = fork();
  if (child == 0) {
    char* args[] = {"ignored-argv0", "one", "two", NULL};
    execve(script, args, environ);
    _exit(99);
  }
  int status;
  waitpid(child, &status, 0);
  describe("the script", status);
}

static void exec_self(const char* self, const char* tmp) {
  int out[2];
  if (pipe(out) != 0) exit(31);
  const int kept = dup(1);
  const int closed = fcntl(1, F_DUPFD_CLOEXEC, 20);
  const pid_t child = fork();
  if (child == 0) {
    dup2(out[1], 1);
    close(out[0]);
    close(out[1]);
    char kept_text[16], closed_text[16];
    snprintf(kept_text, sizeof kept_text, "%d", kept);
    snprintf(closed_text, sizeof closed_text, "%d", closed);
    char* args[] = {"exec_programs", (char*)tmp, "child", kept_text, closed_text, NULL};
    execve(self, args, environ);
    _exit(98);
  }
  close(out[1]);
  char buffer[256] = {0};
  ssize_t total = 0, got;
  while ((got = read(out[0], buffer + total, sizeof buffer - 1 - (size_t)total)) > 0) total += got;
  close(out[0]);
  printf("through the pipe: %s", buffer);
  int status;
  waitpid(child, &status, 0);
  describe("the exec'd sample", status);
  close(kept);
  close(closed);
}

static void spawn_and_shell(const char* tmp) {
  char output[512];
  snprintf(output, sizeof output, "%s/spawned.txt", tmp);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, output, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  char* args[] = {"sh", "-c", "echo spawned; exit 2", NULL};
  pid_t child;
  const int error = posix_spawn(&child, "/bin/sh", &actions, NULL, args, environ);
  posix_spawn_file_actions_destroy(&actions);
  if (error) exit(32);
  int status;
  waitpid(child, &status, 0);
  describe("posix_spawn", status);
  char text[64] = {0};
  const int fd = open(output, O_RDONLY);
  if (fd < 0 || read(fd, text, sizeof text - 1) < 0) exit(33);
  close(fd);
  printf("its output file: %s", text);
  describe("system(\"exit 7\")", system("exit 7"));
  FILE* pipe_in = popen("echo from popen", "r");
  char line[64] = {0};
  if (!pipe_in || !fgets(line, sizeof line, pipe_in)) exit(34);
  printf("popen read: %s", line);
  describe("pclose", pclose(pipe_in));
}

static void exec_errors(const char* tmp) {
  char path[512];
  char* args[] = {"x", NULL};
  snprintf(path, sizeof path, "%s/missing", tmp);
  errno = 0;
  execve(path, args, environ);
  printf("missing file: %s\n", errno == ENOENT ? "ENOENT" : strerror(errno));
  snprintf(path, sizeof path, "%s/plain.txt", tmp);
  write_file(path, "just text\n", 0755);
  errno = 0;
  execve(path, args, environ);
  printf("neither ELF nor script: %s\n", errno == ENOEXEC ? "ENOEXEC" : strerror(errno));
  errno = 0;
  execve(tmp, args, environ);
  printf("a directory: %s\n", errno == EACCES ? "EACCES" : strerror(errno));
}

int main(int argc, char** argv) {
  if (argc > 4 && strcmp(argv[2], "child") == 0) return child_mode(argc, argv);
  if (argc < 2) return 2;
  setvbuf(stdout, NULL, _IONBF, 0);
  run_script(argv[1]);
  exec_self(argv[0], argv[1]);
  spawn_and_shell(argv[1]);
  exec_errors(argv[1]);
  return 0;
}
