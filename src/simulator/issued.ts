/**
 * Every token any simulator in this process has issued (access JWTs and refresh tokens),
 * so a test run can search its logs, messages and files for them afterwards (the leak scan).
 * Bounded: the oldest are forgotten past MAX_REMEMBERED.
 */
const MAX_REMEMBERED = 500_000;
const issued = new Set<string>();

export function rememberIssued(token: string): void {
  issued.add(token);
  if (issued.size > MAX_REMEMBERED) {
    const oldest = issued.values().next().value;
    if (oldest !== undefined) issued.delete(oldest);
  }
}

/** The tokens issued so far in this process, oldest first. */
export function issuedTokens(): string[] {
  return [...issued];
}
