#!/usr/bin/env node
// The ceiling every scenario is measured beside: a bare node:http server answering every request with one fixed
// body (the bytes Waybill answered the scenario's sample request with, passed in CEILING_BODY_BASE64), as
// application/json with a Content-Length. What this process serves is what Node's HTTP stack alone allows on
// this machine at that moment; Waybill's share of it is the ratio the benchmarks report.
import http from 'node:http';

const body = Buffer.from(process.env.CEILING_BODY_BASE64 ?? 'W10=', 'base64');
const headers = { 'content-type': 'application/json; charset=utf-8', 'content-length': body.length };

const server = http.createServer((request, response) => {
  // Drain a request body, as a real handler would, then answer.
  request.resume();
  request.on('end', () => {
    response.writeHead(200, headers);
    response.end(body);
  });
});
server.keepAliveTimeout = 72_000;
server.listen(0, '127.0.0.1', () => {
  const { port } = server.address();
  process.stdout.write(`listening at http://127.0.0.1:${port}\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
