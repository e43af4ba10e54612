import { credentialsOf, redact } from './redact.js';

/** Where the agent's plain progress lines go: console in the CLI, an output channel in the IDE. */
export type Log = (line: string) => void;

/**
 * Wraps a sink so that no line can carry a credentialed URL or one of the secrets, including secrets
 * learned later (a participation token): `addSecret` extends the list for every following line.
 */
export class RedactingLog {
  private readonly secrets = new Set<string>();

  constructor(
    private readonly sink: Log,
    secrets: readonly (string | undefined)[] = [],
  ) {
    for (const secret of secrets) this.addSecret(secret);
  }

  addSecret(secret: string | undefined): void {
    if (secret) this.secrets.add(secret);
  }

  /** Adds the password of a credentialed URL (the URL itself is redacted by its shape). */
  addUrlCredentials(uri: string | undefined): void {
    for (const secret of credentialsOf(uri)) this.secrets.add(secret);
  }

  readonly log: Log = (line) => this.sink(this.redact(line));

  redact(text: string): string {
    return redact(text, [...this.secrets]);
  }
}
