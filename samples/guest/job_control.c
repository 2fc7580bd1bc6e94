// Role: guest sample "job_control": stopping and continuing processes, as
// shells do with Ctrl-Z, `bg` and `fg`: a child that raises SIGSTOP, one that
// raises SIGTSTP (its default action stops it too), a parent stopping a
// paused child with SIGSTOP and ending it with SIGTERM and SIGCONT;
// waitpid(WUNTRACED), waitpid(WCONTINUED) and waitid(WSTOPPED, WCONTINUED)
// report each change, and so does the parent's SIGCHLD handler (its si_code,
// each taken in sigsuspend); a child whose SIGTSTP handler runs instead of
// stopping.
// Invariants: deterministic output only (facts, never pids or times).
// Directives (see samples/README.md):
// archs: x86_64 i386 arm aarch64 riscv64 mips mipsel
// exit: 0
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void check(int ok, const char* what) {
  if (!ok) {
    perror(what);
    exit(1);
  }
}

static const char* name_of(int signal) {
  const char* name = sigabbrev_np(signal);
  return name ? name : "?";
}

static pid_t start_child(void (*body)(int), int argument) {
  fflush(stdout);
  const pid_t child = fork();
  check(child >= 0, "fork");
  if (child == 0) {
    body(argument);
    _exit(5);
  }
  return child;
}

static int ready_pipe[2], go_pipe[2];
static volatile sig_atomic_t chld_code = 0;

static void on_chld(int signal, siginfo_t* info, void* context) {
  (void)signal;
  (void)context;
  chld_code = info->si_code;
}

// Stops itself; once continued, waits for the parent's go (so that the parent
// sees the continue before the exit, which would supersede it), then exits.
static void raise_then_exit(int signal) {
  raise(signal);
  char byte;
  if (read(go_pipe[0], &byte, 1) != 1) _exit(4);
}

static void say_go(void) { check(write(go_pipe[1], "g", 1) == 1, "write"); }

static void pause_forever(int unused) {
  (void)unused;
  if (write(ready_pipe[1], "r", 1) != 1) _exit(2);
  for (;;) pause();
}

static void on_tstp(int signal) {
  static const char text[] = "child: its SIGTSTP handler ran instead of a stop\n";
  if (write(STDOUT_FILENO, text, sizeof text - 1) < 0) _exit(3);
  _exit(signal == SIGTSTP ? 6 : 7);
}

static void pause_with_tstp_handler(int unused) {
  struct sigaction action;
  memset(&action, 0, sizeof action);
  action.sa_handler = on_tstp;
  check(sigaction(SIGTSTP, &action, NULL) == 0, "sigaction");
  pause_forever(unused);
}

static void wait_until_ready(void) {
  char byte;
  check(read(ready_pipe[0], &byte, 1) == 1, "read");
}

static void report_status(const char* what, int status) {
  if (WIFSTOPPED(status)) printf("%s: stopped by %s\n", what, name_of(WSTOPSIG(status)));
  else if (WIFCONTINUED(status)) printf("%s: continued\n", what);
  else if (WIFEXITED(status)) printf("%s: exited with %d\n", what, WEXITSTATUS(status));
  else if (WIFSIGNALED(status)) printf("%s: killed by %s\n", what, name_of(WTERMSIG(status)));
}

// waitpid: stopped, continued, exited.
static void stop_itself_with_sigstop(void) {
  const pid_t child = start_child(raise_then_exit, SIGSTOP);
  int status = 0;
  check(waitpid(child, &status, WUNTRACED) == child, "waitpid");
  report_status("raise(SIGSTOP), waitpid(WUNTRACED)", status);
  check(kill(child, SIGCONT) == 0, "kill");
  check(waitpid(child, &status, WCONTINUED) == child, "waitpid");
  report_status("SIGCONT, waitpid(WCONTINUED)", status);
  say_go();
  check(waitpid(child, &status, 0) == child, "waitpid");
  report_status("then", status);
}

// waitid: CLD_STOPPED and CLD_CONTINUED with their signals.
static void stop_itself_with_sigtstp(void) {
  const pid_t child = start_child(raise_then_exit, SIGTSTP);
  siginfo_t info;
  memset(&info, 0, sizeof info);
  check(waitid(P_PID, child, &info, WSTOPPED) == 0, "waitid");
  printf("raise(SIGTSTP), waitid(WSTOPPED): %s, %s\n", info.si_code == CLD_STOPPED ? "CLD_STOPPED" : "another code",
         name_of(info.si_status));
  check(kill(child, SIGCONT) == 0, "kill");
  memset(&info, 0, sizeof info);
  check(waitid(P_PID, child, &info, WCONTINUED) == 0, "waitid");
  printf("SIGCONT, waitid(WCONTINUED): %s, %s\n", info.si_code == CLD_CONTINUED ? "CLD_CONTINUED" : "another code",
         name_of(info.si_status));
  say_go();
  int status = 0;
  check(waitpid(child, &status, 0) == child, "waitpid");
  report_status("then", status);
}

// A parent stops a paused child, then ends it: a SIGTERM stays pending while
// it is stopped and ends it once SIGCONT continues it.
static void stop_paused_child(void) {
  const pid_t child = start_child(pause_forever, 0);
  wait_until_ready();
  check(kill(child, SIGSTOP) == 0, "kill");
  int status = 0;
  check(waitpid(child, &status, WUNTRACED) == child, "waitpid");
  report_status("kill(child, SIGSTOP), waitpid(WUNTRACED)", status);
  check(kill(child, SIGTERM) == 0 && kill(child, SIGCONT) == 0, "kill");
  check(waitpid(child, &status, 0) == child, "waitpid");
  report_status("SIGTERM then SIGCONT, waitpid", status);
}

// A child with a SIGTSTP handler is not stopped by SIGTSTP.
static void tstp_to_handler(void) {
  const pid_t child = start_child(pause_with_tstp_handler, 0);
  wait_until_ready();
  check(kill(child, SIGTSTP) == 0, "kill");
  int status = 0;
  check(waitpid(child, &status, WUNTRACED) == child, "waitpid");
  report_status("kill(child, SIGTSTP) with a handler, waitpid(WUNTRACED)", status);
}

// Waits in sigsuspend for the SIGCHLD of the next change and names its si_code.
static const char* next_chld_code(const sigset_t* while_waiting) {
  chld_code = 0;
  while (chld_code == 0) sigsuspend(while_waiting);
  switch (chld_code) {
    case CLD_STOPPED: return "CLD_STOPPED";
    case CLD_CONTINUED: return "CLD_CONTINUED";
    case CLD_EXITED: return "CLD_EXITED";
    default: return "another code";
  }
}

// The parent's SIGCHLD handler is told of each change (SIGCHLD is blocked but
// in sigsuspend, so each is taken before the next is caused).
static void sigchld_tells_each_change(void) {
  struct sigaction action, previous_action;
  memset(&action, 0, sizeof action);
  action.sa_sigaction = on_chld;
  action.sa_flags = SA_SIGINFO;
  check(sigaction(SIGCHLD, &action, &previous_action) == 0, "sigaction");
  sigset_t chld, previous_mask;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  check(sigprocmask(SIG_BLOCK, &chld, &previous_mask) == 0, "sigprocmask");
  const pid_t child = start_child(raise_then_exit, SIGSTOP);
  printf("SIGCHLD as the child stops: %s\n", next_chld_code(&previous_mask));
  check(kill(child, SIGCONT) == 0, "kill");
  printf("SIGCHLD as it continues: %s\n", next_chld_code(&previous_mask));
  say_go();
  printf("SIGCHLD as it exits: %s\n", next_chld_code(&previous_mask));
  int status = 0;
  check(waitpid(child, &status, 0) == child, "waitpid");
  check(sigprocmask(SIG_SETMASK, &previous_mask, NULL) == 0, "sigprocmask");
  check(sigaction(SIGCHLD, &previous_action, NULL) == 0, "sigaction");
}

int main(void) {
  check(pipe(ready_pipe) == 0 && pipe(go_pipe) == 0, "pipe");
  stop_itself_with_sigstop();
  stop_itself_with_sigtstp();
  stop_paused_child();
  tstp_to_handler();
  sigchld_tells_each_change();
  return 0;
}
