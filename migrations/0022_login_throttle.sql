-- The login throttle (issue 23; src/domain/admin/throttle.ts): failed logins per (username, client
-- address) — kind 'pair' — and per client address alone — kind 'address', username ''. In the
-- database rather than the gateway's memory so that `anna admin unlock`, another process, clears
-- them while the gateway runs (and a restart does not wipe an attacker's count). Addresses are
-- throttle keys: IPv4 as is, IPv6 by its /64.
CREATE TABLE login_failures (
  kind TEXT NOT NULL CHECK (kind IN ('pair', 'address')),
  username TEXT NOT NULL,
  address TEXT NOT NULL,
  failures INTEGER NOT NULL,
  last_failure_at INTEGER NOT NULL,
  PRIMARY KEY (kind, username, address)
) WITHOUT ROWID;
--> statement-breakpoint
CREATE INDEX login_failures_age ON login_failures (last_failure_at);
