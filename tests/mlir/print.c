/* The few printing entry points `vector.print` lowers to, for the test programs (so they need
 * none of MLIR's runtime libraries, which would pull in libMLIR.so on the GPU machine). */
#include <stdint.h>
#include <stdio.h>

void printF32(float v) { printf("%g", v); }
void printF64(double v) { printf("%g", v); }
void printI64(int64_t v) { printf("%lld", (long long)v); }
void printU64(uint64_t v) { printf("%llu", (unsigned long long)v); }
void printComma(void) { printf(", "); }
void printOpen(void) { printf("( "); }
void printClose(void) { printf(" )"); }
void printNewline(void) { printf("\n"); fflush(stdout); }
void printString(const char *s) { fputs(s, stdout); fflush(stdout); }
