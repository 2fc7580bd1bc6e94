// Role: hostile guest sample "outside_tree": reaches for processes outside
// its own tree: its parent (tracecorn's parent, e.g. the test's shell) and
// pid 1, by kill, pidfd_open and, from a forked child, kill of its
// grandparent's parent. Under tracecorn each is refused as for another
// user's process (kill: EPERM) or one that is not there (pidfd_open: ESRCH);
// its own child stays reachable. The signals are 0 and SIGCONT, which harm
// nothing should containment fail; never run it natively all the same.
// Invariants: one report line per attempt (report.h); exit status 0.
#include "report.h"  // first: it defines _GNU_SOURCE

#include <signal.h>
#include <stdlib.h>
#include <sys/pidfd.h>
#include <sys/wait.h>

int main(void) {
  const pid_t parent = getppid();
  report_result("kill parent 0", kill(parent, 0), 0);
  report_result("kill parent SIGCONT", kill(parent, SIGCONT), 0);
  report_result("kill init SIGCONT", kill(1, SIGCONT), 0);
  report_result("pidfd_open parent", pidfd_open(parent, 0), 0);
  report_result("pidfd_open init", pidfd_open(1, 0), 0);
  const pid_t child = fork();
  if (child < 0) return 1;
  if (child == 0) {
    report_result("child: kill grandparent's parent SIGCONT", kill(parent, SIGCONT), 0);
    _exit(0);
  }
  const int child_fd = pidfd_open(child, 0);
  report_result("pidfd_open own child", child_fd, 0);
  report_result("pidfd_send_signal own child 0", child_fd < 0 ? -1 : pidfd_send_signal(child_fd, 0, NULL, 0), 0);
  int status = 0;
  report_result("wait own child", waitpid(child, &status, 0), 0);
  return 0;
}
