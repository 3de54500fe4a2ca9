// Deterministic randomness (mulberry32), so two runs make the same data and send the same requests.

/** A source of 32-bit unsigned integers for `seed`. */
export function mulberry32(seed) {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return (t ^ (t >>> 14)) >>> 0;
  };
}

/** A source of numbers in [0, 1) for `seed`. */
export function random(seed = 7) {
  const u32 = mulberry32(seed);
  return () => u32() / 4294967296;
}

/** An integer in [0, n) from `rand`. */
export const int = (rand, n) => Math.floor(rand() * n);

/** A random element of `list`. */
export const pick = (rand, list) => list[int(rand, list.length)];
