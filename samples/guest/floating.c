// Role: guest sample "floating": SSE double and x87 long double arithmetic,
// libm calls, and printf/strtod conversions in both directions.
// Invariants: inputs go through volatile variables so the compiler cannot fold
// them. Exactly rounded results (+ - * /, sqrt, conversions) print at full
// precision; transcendental ones (sin, exp, log) print with 15 significant
// digits, because glibc picks their implementation by CPUID (FMA or not) and
// those may legitimately differ in the last bit between CPUs.
// Directives (see samples/README.md):
// strace: yes
// (none)
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static volatile double two = 2.0, one = 1.0, three = 3.0, big = 1e300, tiny = 1e-300;
static volatile long double two_l = 2.0L, one_l = 1.0L, three_l = 3.0L;

int main(void) {
  printf("sqrt(2) = %.17g\n", sqrt(two));
  printf("1/3 = %.17g\n", one / three);
  printf("2/3*3 = %.17g\n", two / three * three);
  printf("big*big = %g, tiny*tiny = %g, -1/0 = %g\n", big * big, tiny * tiny, -one / (two - two));
  printf("nan != nan: %s\n", sqrt(-one) != sqrt(-one) ? "yes" : "no");
  printf("sin(1) = %.15g, cos(1) = %.15g\n", sin(one), cos(one));
  printf("exp(1) = %.15g, log(3) = %.15g\n", exp(one), log(three));
  printf("floor(-2.5) = %g, round(2.5) = %g, trunc(-2.7) = %g\n", floor(-2.5 * one), round(2.5 * one),
         trunc(-2.7 * one));
  printf("(int)-2.7 = %d, (long)1e18 = %ld\n", (int)(-2.7 * one), (long)(1e18 * one));

  printf("sqrtl(2) = %.21Lg\n", sqrtl(two_l));
  printf("1/3 (long double) = %.21Lg\n", one_l / three_l);
  printf("sinl(1) = %.15Lg\n", sinl(one_l));
  printf("LDBL mantissa bits: %d\n", (int)(sizeof(long double) > 8 ? 64 : 53));

  static const char* const inputs[] = {"0.1", "1e-310", "3.141592653589793", "123456789.125",
                                       "-0", "1.7976931348623157e308", "2.2250738585072014e-308"};
  int round_trips = 0;
  for (size_t i = 0; i < sizeof inputs / sizeof inputs[0]; i++) {
    double d = strtod(inputs[i], NULL);
    char text[64];
    snprintf(text, sizeof text, "%.17g", d);
    double back = strtod(text, NULL);
    int same = memcmp(&d, &back, sizeof d) == 0;
    round_trips += same;
    printf("strtod(%s) = %s (%a) round trip %s\n", inputs[i], text, d, same ? "ok" : "BROKEN");
  }
  long double ld = strtold("0.1", NULL);
  printf("strtold(0.1) = %.25Lg\n", ld);
  printf("round trips ok: %d\n", round_trips);
  return 0;
}
