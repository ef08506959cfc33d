/*
 * The attacker of the sandbox race test: swaps two names atomically (renameat2 RENAME_EXCHANGE) as
 * fast as it can, `count` times, so that a folder and a symlink trade places under any host code
 * that resolves a path and then opens it. Built statically so it runs in the busybox test image.
 * Where the filesystem has no RENAME_EXCHANGE (NFS, FUSE) it swaps with three plain renames.
 * Usage: swap A B COUNT
 */
#define _GNU_SOURCE
#include <errno.h>
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
  int exchange = 1;
  char tmp[4096];
  snprintf(tmp, sizeof tmp, "%s.swap", argv[1]);
  for (long i = 0; i < count; i++) {
    if (exchange) {
      if (syscall(SYS_renameat2, AT_FDCWD, argv[1], AT_FDCWD, argv[2], RENAME_EXCHANGE) == 0) {
        done++;
        continue;
      }
      if (errno != EINVAL && errno != ENOSYS && errno != EOPNOTSUPP) continue;
      /* The filesystem has no RENAME_EXCHANGE (NFS, FUSE): three renames, so A is B's symlink part of the time. */
      exchange = 0;
    }
    if (rename(argv[1], tmp) != 0) continue;
    if (rename(argv[2], argv[1]) != 0) {
      rename(tmp, argv[1]);
      continue;
    }
    if (rename(tmp, argv[2]) == 0) done++;
  }
  printf("%ld\n", done);
  return done > 0 ? 0 : 1;
}
