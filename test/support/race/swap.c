/*
 * The attacker of the sandbox race test: swaps two names atomically (renameat2 RENAME_EXCHANGE) as
 * fast as it can, `count` times, so that a folder and a symlink trade places under any host code
 * that resolves a path and then opens it. Built statically so it runs in the busybox test image.
 * Usage: swap A B COUNT
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1)
#endif

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: swap A B COUNT\n");
    return 2;
  }
  long count = atol(argv[3]);
  long done = 0;
  for (long i = 0; i < count; i++) {
    if (syscall(SYS_renameat2, AT_FDCWD, argv[1], AT_FDCWD, argv[2], RENAME_EXCHANGE) == 0) done++;
  }
  printf("%ld\n", done);
  return done > 0 ? 0 : 1;
}
