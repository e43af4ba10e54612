// The progress line on stderr while the benchmark runs: a bar of the whole run (scenarios weighted by
// their usual share of its time), scenario k/n, what it does now and the time elapsed. On a terminal
// one line is rewritten in place (\r); otherwise (a log file, CI) a plain line per step.

export interface Planned {
  name: string;
  /** Rough share of a full run's time. */
  weight: number;
}

export class Progress {
  private readonly total: number;
  private index = -1;
  private doneWeight = 0;
  /** Share of the current scenario done, 0..1. */
  private share = 0;
  private title = '';
  private detail = '';
  private readonly started = Date.now();
  private lastPrint = 0;

  constructor(
    private readonly planned: readonly Planned[],
    private readonly stream: NodeJS.WriteStream = process.stderr,
  ) {
    this.total = planned.reduce((a, p) => a + p.weight, 0) || 1;
  }

  private get tty(): boolean {
    return this.stream.isTTY === true;
  }

  /** The next scenario starts. */
  next(title: string): void {
    if (this.index >= 0) this.doneWeight += this.planned[this.index]!.weight;
    this.index++;
    this.share = 0;
    this.step(title);
  }

  /** A new step within the scenario: printed as its own line when stderr is not a terminal. */
  step(title: string): void {
    this.title = title;
    this.detail = '';
    this.print(true);
  }

  /** How far the current scenario is (0..1, never back) and what it counts now, e.g. `12/200`. */
  at(share: number, detail: string): void {
    this.share = Math.min(1, Math.max(this.share, share));
    this.note(detail);
  }

  note(detail: string): void {
    this.detail = detail;
    this.print(false);
  }

  /** A line of its own (a warning, a result), without breaking the progress line. */
  log(line: string): void {
    if (this.tty) this.stream.write('\r\x1b[2K');
    this.stream.write(`${line}\n`);
    this.print(false, true);
  }

  finish(): void {
    if (this.index >= 0) this.doneWeight += this.planned[this.index]!.weight;
    this.index = this.planned.length;
    this.share = 0;
    this.title = 'done';
    this.detail = '';
    this.print(true);
    if (this.tty) this.stream.write('\n');
  }

  private line(): string {
    const now = Date.now();
    const current = this.index >= 0 && this.index < this.planned.length ? this.planned[this.index]!.weight : 0;
    const share = Math.min(1, (this.doneWeight + this.share * current) / this.total);
    const width = 24;
    const filled = Math.round(share * width);
    const k = Math.min(this.index + 1, this.planned.length);
    const name = this.planned[this.index]?.name;
    const elapsed = Math.round((now - this.started) / 1000);
    return (
      `[${'#'.repeat(filled)}${'-'.repeat(width - filled)}] ${String(Math.round(share * 100)).padStart(3)}% ` +
      `${String(elapsed).padStart(4)} s  ${k}/${this.planned.length}${name ? ` ${name}` : ''}: ${this.title}` +
      (this.detail ? ` (${this.detail})` : '')
    );
  }

  /** `important`: always printed (a new step); otherwise at most 5 times a second, and only on a terminal. */
  private print(important: boolean, force = false): void {
    const now = Date.now();
    if (this.tty) {
      if (!important && !force && now - this.lastPrint < 200) return;
      this.lastPrint = now;
      this.stream.write(`\r\x1b[2K${this.line()}`);
    } else if (important) {
      this.stream.write(`${this.line()}\n`);
    }
  }
}
