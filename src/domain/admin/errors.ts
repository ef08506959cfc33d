/** Failures of accounts and logins (issue 13) that a caller can act on. */
import { Schema } from "effect"

/** A login that did not succeed: unknown user, no account, or a wrong password (never says which). */
export class LoginRefused extends Schema.TaggedError<LoginRefused>()("LoginRefused", {}) {
  override get message() {
    return "wrong username or password"
  }
}

/** Too many failed logins for this username or client: try again after `retryAfterSeconds`. */
export class LoginThrottled extends Schema.TaggedError<LoginThrottled>()("LoginThrottled", {
  retryAfterSeconds: Schema.Number
}) {
  override get message() {
    return `too many failed logins; try again in ${this.retryAfterSeconds} s`
  }
}

/** An account operation refused with a reason (no such user, account exists, weak password…). */
export class AccountError extends Schema.TaggedError<AccountError>()("AccountError", {
  reason: Schema.String
}) {
  override get message() {
    return this.reason
  }
}
