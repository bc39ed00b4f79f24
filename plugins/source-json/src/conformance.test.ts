import { sourceConformance } from '@rampart/plugin-kit/testing';
import { jsonSource } from './index.ts';

sourceConformance({
  definition: jsonSource,
  config: (file) => ({ active: true, json: [{ path: file, address_field: 'src', kind_field: 'type' }] }),
  lines: ['{"src":"192.0.2.1","type":"login_failure","ts":1750000000}', '{"note":"no address"}', '{"src":"192.0.2.2:8080","ts":"2025-06-15T10:00:00Z"}'],
  expected: ['192.0.2.1 login_failure', '192.0.2.2 event'],
});
