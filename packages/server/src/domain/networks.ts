import { all } from 'mcc-mnc-list';

/**
 * Network names for the review page (CONTRACT §13 page 4: "MCC+MNC named by country and operator"), from the
 * `mcc-mnc-list` dataset (kept in step with Wikipedia's list of mobile network codes), never a table typed here.
 */

export interface NetworkName {
  country: string;
  operator: string;
}

interface Candidate extends NetworkName {
  countryCode: string;
  operational: boolean;
}

let byCode: Map<string, NetworkName> | null = null;

/**
 * One name per MCC+MNC. The dataset lists some codes under several countries (310260 under the United States,
 * Puerto Rico and the US Virgin Islands): an operational entry wins over one that is not, then the entry of the
 * country holding most of that MCC's codes (the MCC's own country), then the first listed.
 */
function load(): Map<string, NetworkName> {
  const candidates = new Map<string, Candidate[]>();
  const countriesOfMcc = new Map<string, Map<string, number>>();
  for (const r of all()) {
    if (!/^\d{3}$/.test(r.mcc) || !/^\d{2,3}$/.test(r.mnc)) continue;
    const code = r.mcc + r.mnc;
    const list = candidates.get(code) ?? [];
    list.push({
      // A few entries (test and internal codes) have no country, or only a brand.
      country: r.countryName ?? '',
      operator: r.operator || r.brand || '',
      countryCode: r.countryCode,
      operational: r.status === 'Operational',
    });
    candidates.set(code, list);
    const countries = countriesOfMcc.get(r.mcc) ?? new Map<string, number>();
    countries.set(r.countryCode, (countries.get(r.countryCode) ?? 0) + 1);
    countriesOfMcc.set(r.mcc, countries);
  }
  const names = new Map<string, NetworkName>();
  for (const [code, list] of candidates) {
    const countries = countriesOfMcc.get(code.slice(0, 3));
    const weight = (c: Candidate) => (c.operational ? 1_000_000 : 0) + (countries?.get(c.countryCode) ?? 0);
    let best = list[0] as Candidate;
    for (const c of list) if (weight(c) > weight(best)) best = c;
    names.set(code, { country: best.country, operator: best.operator });
  }
  return names;
}

/** The country and operator of an MCC+MNC (5 or 6 digits), or null when the dataset does not know it. */
export function networkName(mccMnc: string): NetworkName | null {
  byCode ??= load();
  return byCode.get(mccMnc) ?? null;
}
