/**
 * "Did you mean": the closest of the known words to a mistyped command, action or flag. Only a near miss is
 * suggested (a letter or two wrong, missing, extra or swapped); anything further gets no guess, since a wrong
 * guess sends the user the wrong way.
 */

/** Edit distance counting a swap of two neighbouring letters as one edit (optimal string alignment). */
export function editDistance(a: string, b: string): number {
  const rows = a.length + 1;
  const cols = b.length + 1;
  const d: number[][] = Array.from({ length: rows }, (_, i) =>
    Array.from({ length: cols }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)),
  );
  const at = (i: number, j: number) => d[i]?.[j] ?? Number.POSITIVE_INFINITY;
  for (let i = 1; i < rows; i++) {
    for (let j = 1; j < cols; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let best = Math.min(at(i - 1, j) + 1, at(i, j - 1) + 1, at(i - 1, j - 1) + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        best = Math.min(best, at(i - 2, j - 2) + 1);
      (d[i] as number[])[j] = best;
    }
  }
  return at(a.length, b.length);
}

/** The known word nearest to `word`, when it is near enough to be what was meant. */
export function closest(word: string, known: Iterable<string>): string | undefined {
  const typed = word.toLowerCase();
  // The leading dashes of a flag are never the mistake: they do not make a longer word more forgiving.
  const allowed = Math.max(1, Math.floor(typed.replace(/^-+/, '').length / 3));
  let best: string | undefined;
  let bestDistance = Number.POSITIVE_INFINITY;
  for (const candidate of known) {
    const distance = editDistance(typed, candidate.toLowerCase());
    if (distance < bestDistance) {
      best = candidate;
      bestDistance = distance;
    }
  }
  return bestDistance <= allowed ? best : undefined;
}

/** `unknown <what> "<word>"`, with `; did you mean <nearest>?` when one is near. */
export function unknownWord(what: string, word: string, known: Iterable<string>): string {
  const guess = closest(word, known);
  return `unknown ${what} "${word}"${guess === undefined ? '' : `; did you mean ${guess}?`}`;
}

/** Every `--flag` a help text names: the flags a command takes are the ones its help documents. */
export const flagsIn = (help: string): Set<string> => new Set(help.match(/--[a-z][a-z0-9-]*/g) ?? []);

/**
 * The message for parseArgs' ERR_PARSE_ARGS_UNKNOWN_OPTION (whose own message suggests `--` for positionals,
 * which is rarely what was meant), with the nearest flag of the command's help; undefined for other errors.
 */
export function unknownOptionMessage(error: unknown, help: string): string | undefined {
  if ((error as NodeJS.ErrnoException | null)?.code !== 'ERR_PARSE_ARGS_UNKNOWN_OPTION') return undefined;
  const option = /option '([^']+)'/.exec((error as Error).message)?.[1];
  if (option === undefined) return undefined;
  return unknownWord('option', option, option.startsWith('--') ? flagsIn(help) : []);
}
