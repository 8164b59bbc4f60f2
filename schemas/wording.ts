// How the documentation writes a value it reads from the configuration or a constant, so a
// text never holds a second copy of the number.

const plural = (n: number, unit: string) => `${n} ${unit}${n === 1 ? '' : 's'}`

/** A whole number as English prose writes it: 100,000. */
export const count = (n: number) => n.toLocaleString('en-US')

/** `24 hours`, `10 seconds`, `1.5 seconds`, `250 ms`: the largest exact unit up to hours. */
export function duration (ms: number): string {
  if (ms >= 3_600_000 && ms % 3_600_000 === 0) return plural(ms / 3_600_000, 'hour')
  if (ms >= 60_000 && ms % 60_000 === 0) return plural(ms / 60_000, 'minute')
  if (ms >= 1000) return plural(+(ms / 1000).toFixed(3), 'second')
  return `${ms} ms`
}

export const hours = (n: number) => plural(n, 'hour')
export const days = (n: number) => plural(n, 'day')

/** A delay as the retry schedule reads: `5 s`, `5 min`, `2 h`, `1.5 h`. */
function shortDelay (ms: number): string {
  const [value, unit] = ms >= 3_600_000 ? [ms / 3_600_000, 'h'] : ms >= 60_000 ? [ms / 60_000, 'min'] : ms >= 1000 ? [ms / 1000, 's'] : [ms, 'ms']
  return `${+value.toFixed(1)} ${unit}`
}

/** A list as a sentence: `a, b and c`. */
export function listed (items: string[]): string {
  return items.length <= 1 ? (items[0] ?? '') : `${items.slice(0, -1).join(', ')} and ${items.at(-1)!}`
}

/** Retry delays: `5 s, 5 min, 30 min and 2 h`. */
export const delays = (ms: number[]) => listed(ms.map(shortDelay))

/** Roughly how long: `a second` up to 1.5 s, then whole seconds. */
export const roughly = (ms: number) => ms < 1500 ? 'a second' : plural(Math.round(ms / 1000), 'second')
