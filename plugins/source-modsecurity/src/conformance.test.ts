import { sourceConformance } from '@rampart/plugin-kit/testing';
import { modsecuritySource } from './index.ts';

sourceConformance({
  definition: modsecuritySource,
  config: (file) => ({ active: true, waf_logs: file }),
  lines: [
    '2024/06/01 10:00:03 [error] 12#12: *7 [client 192.0.2.44] ModSecurity: Access denied with code 403 (phase 2). [id "949110"], client: 192.0.2.44, server: _, request: "GET /?a=1 HTTP/1.1", host: "h"',
    '2024/06/01 10:00:04 [error] 12#12: *8 user "bob": password mismatch, client: 192.0.2.45, server: x, request: "GET / HTTP/1.1", host: "h"',
    '192.0.2.46 - - [01/Jun/2024:10:00:05 +0000] "GET / HTTP/1.1" 200 612 "-" "curl/8"',
  ],
  expected: ['192.0.2.44 modsec_block', '192.0.2.45 http_auth_failure'],
});
