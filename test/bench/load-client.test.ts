import { describe, expect, it } from 'vitest';
import { parseWrk } from '../../bench/_load-client.ts';

// Output of Debian's wrk 4.1.0 (`wrk --latency -t 1 -c 4 -d 1s`), with the Req/Sec row's
// +/- Stdev cell changed to 79.99%: the p99 was read from that cell ("Req/Sec", NaN) before.
const OUTPUT = `Running 1s test @ http://127.0.0.1:18089/
  1 threads and 4 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency     2.44ms    4.94ms  50.35ms   90.46%
    Req/Sec     8.36k     3.52k   13.05k    79.99%
  Latency Distribution
     50%  235.00us
     75%    2.60ms
     90%    7.04ms
     99%   24.72ms
  8363 requests in 1.01s, 0.99MB read
  Non-2xx or 3xx responses: 3
  Socket errors: connect 0, read 1, write 0, timeout 2
Requests/sec:   8271.79
Transfer/sec:      0.98MB
`;

describe('the load client reads what wrk printed', () => {
  it('takes p50 and p99 from the latency distribution, not from a stdev cell', () => {
    expect(parseWrk(OUTPUT)).toEqual({ client: 'wrk', requests: 8363, seconds: 1.01, bytes: 0.99 * 1024 ** 2, p50: 235 * 0.001, p99: 24.72, bad: 6 });
  });
});
