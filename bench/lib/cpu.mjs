// CPU time and resident memory of processes, from /proc (Linux). A server with --workers is a cluster primary
// and its workers: the tree readers count them all.
import { readdirSync, readFileSync } from 'node:fs';

const CLOCK_TICKS = 100; // USER_HZ

/** The fields of /proc/<pid>/stat after the command name, or null when the process is gone. */
function stat(pid) {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return text.slice(text.lastIndexOf(')') + 2).split(' ');
  } catch {
    return null;
  }
}

/** User + system CPU (ms) of one process; 0 once it has ended. */
export function cpuMs(pid) {
  const f = stat(pid);
  return f ? ((Number(f[11]) + Number(f[12])) * 1000) / CLOCK_TICKS : 0;
}

function descendants(pid) {
  const all = [pid];
  const byParent = new Map();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const fields = stat(entry);
    if (fields) byParent.set(entry, Number(fields[1]));
  }
  for (let i = 0; i < all.length; i++) {
    for (const [child, parent] of byParent) if (parent === all[i]) all.push(Number(child));
  }
  return all;
}

/** User + system CPU (ms) of a process and its descendants. */
export function treeCpuMs(pid) {
  return descendants(pid).reduce((total, p) => total + cpuMs(p), 0);
}

/** The `Vm…` lines of /proc/<pid>/status that match `pattern`, as { name: 'value kB' }. */
export function memoryOf(pid, pattern = /^Vm(RSS|HWM)/) {
  try {
    return Object.fromEntries(
      readFileSync(`/proc/${pid}/status`, 'utf8')
        .split('\n')
        .filter((line) => pattern.test(line))
        .map((line) => line.split(/:\s+/)),
    );
  } catch {
    return {};
  }
}

/** Resident memory (bytes) of a process and its descendants. */
export function treeRssBytes(pid) {
  let total = 0;
  for (const p of descendants(pid)) {
    const rss = memoryOf(p, /^VmRSS/).VmRSS;
    if (rss) total += Number.parseInt(rss, 10) * 1024;
  }
  return total;
}

/** CPU (ms) of the PostgreSQL backends serving the database of `databaseUrl` (their command line names it). */
export function postgresCpuMs(databaseUrl) {
  if (!databaseUrl.startsWith('postgres')) return 0;
  const db = new URL(databaseUrl).pathname.replace(/^\//, '');
  let total = 0;
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      if (readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(` ${db} `)) total += cpuMs(pid);
    } catch {
      // ended meanwhile
    }
  }
  return total;
}
