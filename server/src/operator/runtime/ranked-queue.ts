/** Items by rank, lower first, then in order of adding: a binary min-heap. */
export class RankedQueue<T> {
  private readonly items: { item: T; rank: number; seq: number }[] = [];
  private seq = 0;

  get size(): number {
    return this.items.length;
  }

  push(item: T, rank: number): void {
    const items = this.items;
    items.push({ item, rank, seq: this.seq++ });
    let i = items.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!this.before(i, parent)) break;
      [items[i], items[parent]] = [items[parent]!, items[i]!];
      i = parent;
    }
  }

  /** The first item, taken out; undefined when empty. */
  pop(): T | undefined {
    const items = this.items;
    const top = items[0];
    const last = items.pop();
    if (items.length > 0 && last) {
      items[0] = last;
      let i = 0;
      for (;;) {
        const left = 2 * i + 1;
        const right = left + 1;
        let first = i;
        if (left < items.length && this.before(left, first)) first = left;
        if (right < items.length && this.before(right, first)) first = right;
        if (first === i) break;
        [items[i], items[first]] = [items[first]!, items[i]!];
        i = first;
      }
    }
    return top?.item;
  }

  private before(a: number, b: number): boolean {
    const x = this.items[a]!;
    const y = this.items[b]!;
    return x.rank < y.rank || (x.rank === y.rank && x.seq < y.seq);
  }
}
