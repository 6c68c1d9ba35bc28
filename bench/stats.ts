/** Nearest-rank percentile of unsorted samples (NaN for none). */
export function percentile(samples: ArrayLike<number>, p: number): number {
  if (samples.length === 0) return Number.NaN;
  const sorted = Float64Array.from(samples as ArrayLike<number>).sort();
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1] as number;
}

/** Grows as needed; holds millions of latencies without boxing them. */
export class Samples {
  #data = new Float64Array(1 << 16);
  length = 0;

  push(value: number): void {
    if (this.length === this.#data.length) {
      const bigger = new Float64Array(this.#data.length * 2);
      bigger.set(this.#data);
      this.#data = bigger;
    }
    this.#data[this.length++] = value;
  }

  values(): Float64Array {
    return this.#data.subarray(0, this.length);
  }
}
