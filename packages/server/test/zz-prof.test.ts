import { it } from 'vitest';
import { engines } from './support/engines.js';
import { startHarness } from './support/http.js';
it('t', async () => {
  const e = engines()[0]!;
  for (let i = 0; i < 6; i++) {
    const t0 = performance.now();
    const h = await startHarness(e);
    const t1 = performance.now();
    await h.app.ready();
    const t2 = performance.now();
    const a = await h.createAccount();
    const t3 = performance.now();
    await h.inject(`/dlr?key=${a.key}&secret=${a.secret}&messageid=x`);
    const t4 = performance.now();
    await h.close();
    const t5 = performance.now();
    console.log('start', (t1-t0)|0, 'ready', (t2-t1)|0, 'acct', (t3-t2)|0, 'dlr', (t4-t3)|0, 'close', (t5-t4)|0);
  }
}, 120000);
