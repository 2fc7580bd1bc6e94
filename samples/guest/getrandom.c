// Role: guest sample "getrandom": the getrandom system call (blocking and
// GRND_NONBLOCK) and getentropy on top of it.
// Invariants: never prints random bytes, only facts about them (lengths,
// nonzero, two draws differing); the chance of a false "no" is 2^-256.
// Directives (see samples/README.md):
// strace: yes
// (none)
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

static int any_nonzero(const unsigned char* p, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (p[i]) return 1;
  return 0;
}

int main(void) {
  unsigned char a[32] = {0}, b[32] = {0}, c[32] = {0}, e[32] = {0};
  ssize_t na = getrandom(a, sizeof a, 0);
  ssize_t nb = getrandom(b, sizeof b, GRND_NONBLOCK);
  printf("getrandom(32, 0) returned: %zd\n", na);
  printf("getrandom(32, GRND_NONBLOCK) returned: %zd\n", nb);
  printf("random bytes nonzero: %s\n", any_nonzero(a, sizeof a) && any_nonzero(b, sizeof b) ? "yes" : "no");
  printf("two draws differ: %s\n", memcmp(a, b, sizeof a) != 0 ? "yes" : "no");
  printf("getrandom(0 bytes) returned: %zd\n", getrandom(c, 0, 0));
  printf("zero-length draw left the buffer alone: %s\n", any_nonzero(c, sizeof c) ? "no" : "yes");
  printf("getentropy(32) returned: %d\n", getentropy(e, sizeof e));
  printf("getentropy bytes nonzero: %s\n", any_nonzero(e, sizeof e) ? "yes" : "no");
  return 0;
}
