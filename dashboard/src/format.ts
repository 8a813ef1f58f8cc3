// Numbers for people (issue 25): memory in GiB/MiB, percents, temperatures, powers and measured
// values in the largest unit that keeps them readable (ns → us/ms/s), never 17 digits.

// A decimal with at most `digits` significant digits, trailing zeros dropped: 1.919, 2, 0.5.
export function decimal(value: number, digits = 3): string {
  if (!Number.isFinite(value)) return String(value);
  if (value === 0) return "0";
  const magnitude = Math.floor(Math.log10(Math.abs(value)));
  const decimals = Math.max(0, digits - 1 - magnitude);
  return String(Number(value.toFixed(Math.min(decimals, 6))));
}

// MiB as the memory of a GPU reads: "79.6 GiB", "512 MiB".
export function mib(value: number): string {
  if (value >= 1024) return `${decimal(value / 1024)} GiB`;
  return `${decimal(value)} MiB`;
}

export function percent(value: number): string {
  return `${decimal(value, value >= 10 ? 3 : 2)}%`;
}

// A measurement in its unit, time units scaled and named as `kiln bench` and the API's
// value_text name them (perf::format_value: "us" for microseconds).
const TIME: [string, number][] = [
  ["s", 1e9],
  ["ms", 1e6],
  ["us", 1e3],
  ["ns", 1],
];
const TO_NS: Record<string, number> = { ns: 1, us: 1e3, "µs": 1e3, ms: 1e6, s: 1e9 };

export function measure(value: number, unit: string): string {
  const factor = TO_NS[unit];
  if (factor !== undefined) {
    const ns = value * factor;
    const [name, size] = TIME.find(([, size]) => Math.abs(ns) >= size) ?? TIME[TIME.length - 1];
    return `${decimal(ns / size, 3)} ${name}`;
  }
  if (!unit) return decimal(value, 4);
  return unit.startsWith("/") || unit === "%" ? `${decimal(value, 4)}${unit}` : `${decimal(value, 4)} ${unit}`;
}

// A relative change as a signed percent: "+20.1%", "-3%".
export function change(percentValue: number): string {
  return `${percentValue >= 0 ? "+" : "−"}${decimal(Math.abs(percentValue))}%`;
}
