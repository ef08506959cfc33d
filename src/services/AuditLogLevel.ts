/**
 * AuditLogLevel — the level of anna's audit lines, such as `runtime.exception_path` (EX-009: the
 * gateway itself, not the sandbox, connects to a remote MCP server). They are always logged; the
 * level says who reads them:
 *
 * - info (the default) in the gateway and in custom deployments: a long-running service acting for
 *   many users, whose log is the operator's trail of what it did outside the sandbox;
 * - debug in a one-off CLI command (`anna chat`, `anna mcp list`; set in src/programs/logging.ts):
 *   the person who runs it is the operator, asked for the connection, and sees what it reached in
 *   the command's own output. An info line there is noise on every run (and in the middle of a chat);
 *   `ANNA_LOG_LEVEL=debug` shows it.
 */
import { Context, type LogLevel } from "effect"

export const AuditLogLevel = Context.Reference<LogLevel.Severity>("anna/AuditLogLevel", { defaultValue: () => "Info" })
