// The operator API (/admin/v1) as the benchmarks call it: a bearer token, JSON in and out.

/**
 * A client of `baseUrl`'s operator API. `request` answers { status, body } whatever the status; `post` throws
 * unless the answer is 2xx. A body may be passed already serialized (a string), as the ingest load does.
 */
export function adminClient(baseUrl, token) {
  async function request(method, path, body) {
    const res = await fetch(`${baseUrl}/admin/v1${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : null };
  }
  return {
    request,
    async post(path, body) {
      const res = await request('POST', path, body);
      if (res.status < 200 || res.status > 299) {
        throw new Error(`POST ${path}: ${res.status} ${JSON.stringify(res.body).slice(0, 300)}`);
      }
      return res.body;
    },
  };
}
